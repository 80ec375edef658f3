// fpgagen engine library: the processes of docs/engine.md as Vitis HLS C++ templates, one per
// block of the RTL library (templates/rtl/lib/fg_*.v), with the same items, words and entries.
//
// A channel between stages is an array of `subs` sub-channel streams of items {end, index, value}:
// the nonzero activations one producer group found, then one end item per vector. The generated
// top function and stage functions are canonical DATAFLOW regions (UG1399): each process below is
// called once per region, every stream has one producer and one consumer, and an array of streams
// is only ever indexed by a constant (a literal, or the index of a fully unrolled loop). Every loop
// of a process is `PIPELINE II=1`, or fully unrolled inside one. Nothing here is specific to a
// model: sizes come from each stage's `cfg` (the engine plan), tables from weights/*.h. The
// arithmetic is docs/numerics.md: exact integer sums, then bias (with the rounding term), an
// arithmetic shift and a clamp.
#ifndef FPGAGEN_ENGINE_H
#define FPGAGEN_ENGINE_H

#include <stdint.h>
#include <type_traits>

#include "ap_axi_sdata.h"
#include "ap_int.h"
#include "hls_stream.h"

namespace fpgagen {

// Activations travel as 16-bit values whatever the precision (activation widths are at most 16).
typedef ap_int<16> act_t;

// An item of a sub-channel: a nonzero activation and its index, or (end) the end of a vector.
template <int INDEX_BITS>
struct item {
    bool end;
    ap_uint<INDEX_BITS> index;
    act_t value;
};

template <class Item>
inline Item value_item(unsigned index, act_t value) {
    Item made;
    made.end = false;
    made.index = index;
    made.value = value;
    return made;
}

template <class Item>
inline Item end_item() {
    Item made;
    made.end = true;
    made.index = 0;
    made.value = 0;
    return made;
}

// A word of G values for a serializer: {end, base, count, mask, values}. Value i has index
// base * STRIDE + OFFSET + i; `mask` marks the nonzero ones, `count` how many there are.
template <int G, int BASE_BITS, int COUNT_BITS>
struct word {
    bool end;
    ap_uint<BASE_BITS> base;
    ap_uint<COUNT_BITS> count;
    ap_uint<G> mask;
    act_t values[G];
};

template <class Word, int G>
inline Word end_word() {
#pragma HLS INLINE
    Word made;
    made.end = true;
    made.base = 0;
    made.count = 0;
    made.mask = 0;
    for (int i = 0; i < G; ++i) {
#pragma HLS UNROLL
        made.values[i] = 0;
    }
    return made;
}

// The group of G values starting at value `first` of `values`, as a word numbered `base`; a value
// is kept when `exists` and nonzero.
template <class Word, int G, int N>
inline Word group_word(const act_t values[N], const bool exists[N], int first, unsigned base) {
#pragma HLS INLINE
    Word made;
    made.end = false;
    made.base = base;
    ap_uint<G> mask = 0;
    unsigned count = 0;
    for (int i = 0; i < G; ++i) {
#pragma HLS UNROLL
        const act_t value = values[first + i];
        const bool kept = exists[first + i] && value != 0;
        mask = mask | (ap_uint<G>(kept ? 1 : 0) << i);
        count += kept ? 1 : 0;
        made.values[i] = value;
    }
    made.mask = mask;
    made.count = count;
    return made;
}

// One PE's slot of a weight beat: valid << (LB + WB) | local << WB | (weight & (2^WB - 1)). An
// off-chip slot is 8, 16 or 32 bits, its local field padded to fill it.
template <int WB, int LB, class Word>
inline void unpack(Word slot, bool& valid, ap_uint<LB>& local, ap_int<WB>& weight) {
    weight = ap_uint<WB>(slot & ((Word(1) << WB) - 1));
    local = static_cast<unsigned>((slot >> WB) & ((Word(1) << LB) - 1));
    valid = ((slot >> (WB + LB)) & 1) != 0;
}

// An entry of a PE's FIFO: {end, local address, weight, activation} (the bank is the PIPO buffer).
// `product` is what the PE adds: x times the weight.
template <int LOCAL_BITS, int WEIGHT_BITS>
struct entry {
    bool end;
    ap_uint<LOCAL_BITS> local;
    ap_int<WEIGHT_BITS> weight;
    act_t x;

    entry() : end(false), local(0), weight(0), x(0) {}
    entry(bool closes, act_t value) : end(closes), local(0), weight(0), x(value) {}
    template <class Word>
    void unpack_slot(Word slot, bool& valid) {
        unpack<WEIGHT_BITS, LOCAL_BITS>(slot, valid, local, weight);
    }
    ap_int<16 + WEIGHT_BITS> product() const { return x * weight; }
    ap_uint<WEIGHT_BITS> index() const { return ap_uint<WEIGHT_BITS>(weight); }  // a codebook's
};

// Positions only (docs/engine.md, "Weight encodings"): the layer's nonzeros share one weight, so an
// entry carries none; the PE multiplies x by PE_SCALE (a shared weight that is no power of two) or
// the drain shifts the sum (`scaled`).
template <int LOCAL_BITS>
struct entry<LOCAL_BITS, 0> {
    bool end;
    ap_uint<LOCAL_BITS> local;
    act_t x;

    entry() : end(false), local(0), x(0) {}
    entry(bool closes, act_t value) : end(closes), local(0), x(value) {}
    template <class Word>
    void unpack_slot(Word slot, bool& valid) {
        local = static_cast<unsigned>(slot & ((Word(1) << LOCAL_BITS) - 1));
        valid = ((slot >> LOCAL_BITS) & 1) != 0;
    }
    act_t product() const { return x; }
};

// A looked-up row waiting for its beats: {end, start, beats, x}.
template <int START_BITS, int COUNT_BITS>
struct row {
    bool end;
    ap_uint<START_BITS> start;
    ap_uint<COUNT_BITS> beats;
    act_t x;
};

// The position of the lowest set bit of a nonzero mask (a tree of G comparisons, unrolled).
template <int G>
inline unsigned lowest(ap_uint<G> mask) {
#pragma HLS INLINE
    unsigned position = 0;
    for (int i = G - 1; i >= 0; --i) {
#pragma HLS UNROLL
        if (((mask >> i) & 1) != 0) {
            position = i;
        }
    }
    return position;
}

// docs/numerics.md: y = clamp((acc + bias') >> shift, lo, hi), bias' holding the rounding term
// 2^(shift-1); >> is arithmetic. ACC is the layer's exact worst case: `acc` is a bank's sum,
// scaled by the shared weight of a positions-only layer (`scaled`).
template <int ACC, class Bias>
inline act_t requantize(ap_int<ACC> acc, Bias bias, unsigned shift, int lo, int hi) {
#pragma HLS INLINE
    const ap_int<ACC> total = acc + ap_int<ACC>(bias);
    const ap_int<ACC> shifted = total >> shift;
    return shifted < lo ? act_t(lo) : (shifted > hi ? act_t(hi) : act_t(shifted));
}

// A dataflow bank's sum times DRAIN_SCALE: the shared weight +-2^k of a positions-only layer (a
// constant power of two: a shift), 1 otherwise.
template <class Cfg>
inline ap_int<Cfg::ACC_BITS> scaled(typename Cfg::acc_t sum) {
#pragma HLS INLINE
    return ap_int<Cfg::ACC_BITS>(sum) * Cfg::DRAIN_SCALE;
}

// ---------------------------------------------------------------------------------------------
// Serializer (fg_serializer.v): one vector's words into items, one nonzero value per cycle, lowest
// first; a word without nonzero values (the reader's: a drain writes none) costs a cycle; the end
// word becomes the end item.
template <int G, int STRIDE, int OFFSET, class Word, class Item>
void serialize(hls::stream<Word>& words, hls::stream<Item>& items) {
    Word held = end_word<Word, G>();
    ap_uint<G> pending = 0;
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
        if (pending == 0) {
            held = words.read();
            pending = held.mask;
            if (held.end) {
                items.write(end_item<Item>());
                done = true;
            }
        }
        if (pending != 0) {
            const unsigned position = lowest<G>(pending);
            items.write(value_item<Item>(held.base.to_uint() * STRIDE + OFFSET + position, held.values[position]));
            pending = pending & (pending - 1);  // the lowest set bit, this position's, goes
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Input reader (fg_reader.v): one vector's AXI4-Stream beats of LANES values (x[t*LANES + k] in
// bits 16k+15..16k of beat t); group s (values s*G .. s*G+G-1) of each beat becomes a word for
// sub-channel s's serializer; after the last beat, an end word on each.
template <int LANES, int S, int N_IN, class Beat, class Word>
void read_beats(hls::stream<Beat>& x_in, hls::stream<Word> (&words)[S]) {
    const int BEATS = (N_IN + LANES - 1) / LANES;
    const int G = LANES / S;
    for (int t = 0; t <= BEATS; ++t) {
#pragma HLS PIPELINE II=1
        if (t == BEATS) {
            for (int s = 0; s < S; ++s) {
#pragma HLS UNROLL
                words[s].write(end_word<Word, G>());
            }
        } else {
            const Beat beat = x_in.read();
            act_t values[LANES];
            bool exists[LANES];
#pragma HLS ARRAY_PARTITION variable=values type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=exists type=complete dim=1
            for (int k = 0; k < LANES; ++k) {
#pragma HLS UNROLL
                values[k] = beat.data.range(16 * k + 15, 16 * k);
                exists[k] = t * LANES + k < N_IN;
            }
            for (int s = 0; s < S; ++s) {
#pragma HLS UNROLL
                words[s].write(group_word<Word, G, LANES>(values, exists, s * G, t));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Merger (fg_merger.v): one vector's items of S sub-channels dealt to K issue units, round robin
// by arrival. Each sub-channel's head waits in a register until a unit takes it (at most K
// activations a cycle); the vector ends when every sub-channel has delivered its end item, and
// every unit then gets one.
template <int S, int K, class Item, class Dealt>
void merge(hls::stream<Item> (&in)[S], hls::stream<Dealt> (&units)[K]) {
    Item head[S];
    bool held[S];
    bool ended[S];
#pragma HLS ARRAY_PARTITION variable=head type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=held type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=ended type=complete dim=1
    // fpgagen: not hot: once per vector, every sub-channel at once (unrolled)
    for (int s = 0; s < S; ++s) {
#pragma HLS UNROLL
        head[s] = end_item<Item>();
        held[s] = false;
        ended[s] = false;
    }
    unsigned next = 0;  // the unit that gets the next activation
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
        bool all_ended = true;
        unsigned taken = 0;
        bool take[S];
        unsigned unit[S];
#pragma HLS ARRAY_PARTITION variable=take type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=unit type=complete dim=1
        for (int s = 0; s < S; ++s) {
#pragma HLS UNROLL
            if (!held[s] && !ended[s]) {
                held[s] = in[s].read_nb(head[s]);
            }
            if (held[s] && head[s].end) {
                ended[s] = true;
                held[s] = false;
            }
            take[s] = held[s] && taken < unsigned(K);
            unit[s] = (next + taken) % K;
            if (take[s]) {
                held[s] = false;
                ++taken;
            }
            all_ended = all_ended && ended[s];
        }
        for (int u = 0; u < K; ++u) {
#pragma HLS UNROLL
            bool dealt = false;
            Dealt to_unit = end_item<Dealt>();
            for (int s = 0; s < S; ++s) {
#pragma HLS UNROLL
                if (take[s] && unit[s] == unsigned(u)) {
                    to_unit = value_item<Dealt>(head[s].index.to_uint(), head[s].value);
                    dealt = true;
                }
            }
            if (dealt || all_ended) {
                units[u].write(to_unit);
            }
        }
        next = (next + taken) % K;
        done = all_ended;
    }
}

// ---------------------------------------------------------------------------------------------
// Dataflow stage: an issue unit (fg_unit.v) is two processes. The lookup turns activations into
// rows (the row table); rows without beats cost nothing further. The issue sends a row's beats,
// one a cycle: each valid slot becomes an entry in its PE's FIFO; the end item an end entry at
// every PE.
template <class Cfg>
void lookup(hls::stream<typename Cfg::unit_item_t>& items, hls::stream<typename Cfg::row_t>& rows) {
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
        const typename Cfg::unit_item_t next = items.read();
        typename Cfg::row_t found;
        found.end = next.end;
        found.start = Cfg::row_start[next.index];
        found.beats = Cfg::row_beats[next.index];
        found.x = next.value;
        if (next.end || found.beats != 0) {
            rows.write(found);
        }
        done = next.end;
    }
}

// `weights`: the stage's ROM, or this unit's copy of its UltraRAM weights (a copy per unit, as
// fg_stage.v has: a written array is not duplicated for the processes that read it).
template <class Cfg>
void issue(hls::stream<typename Cfg::row_t>& rows, hls::stream<typename Cfg::entry_t> (&entries)[Cfg::PES],
           const typename Cfg::slot_t (&weights)[Cfg::BEATS][Cfg::PES]) {
    typedef typename Cfg::entry_t entry_t;
    unsigned beat = 0, left = 0;
    act_t x = 0;
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
        if (left == 0) {
            const typename Cfg::row_t next = rows.read();
            beat = next.start;
            left = next.beats;
            x = next.x;
            done = next.end;
        }
        if (done) {
            for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
                entries[p].write(entry_t(true, 0));
            }
        } else {
            for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
                entry_t slot(false, x);
                bool valid;
                slot.unpack_slot(weights[beat][p], valid);
                if (valid) {
                    entries[p].write(slot);
                }
            }
            ++beat;
            --left;
        }
    }
}

// Accumulator writes still in flight, per PE: the read of an entry can come before the writes of
// the few entries ahead of it have landed, so each PE keeps its last FORWARD writes (address, sum)
// and an entry whose address matches one takes the newest such sum (fg_pe.v's forwarding). This is
// what makes `DEPENDENCE inter false` on the accumulators true for a read-modify-write pipeline of
// up to FORWARD cycles.
const int FORWARD = 3;

template <int ACC, int LB>
struct history {
    ap_uint<LB> address[FORWARD];
    ap_int<ACC> sum[FORWARD];
    bool valid[FORWARD];
};

template <int ACC, int LB>
inline void clear_history(history<ACC, LB>& h) {
#pragma HLS INLINE
    for (int i = 0; i < FORWARD; ++i) {
#pragma HLS UNROLL
        h.address[i] = 0;
        h.sum[i] = 0;
        h.valid[i] = false;
    }
}

// acc[local] += product (x * w, or x), reading through the history; products wider than the
// accumulator wrap, which is exact because the true sum fits (docs/numerics.md).
template <int ADDRESSES, int ACC, int LB, class Product>
inline void accumulate(ap_int<ACC> acc[ADDRESSES], history<ACC, LB>& h, bool valid, ap_uint<LB> local,
                       Product product) {
#pragma HLS INLINE
    ap_int<ACC> old = acc[local];
    for (int i = FORWARD - 1; i >= 0; --i) {  // the newest matching write (i = 0) wins
#pragma HLS UNROLL
        if (h.valid[i] && h.address[i] == local) {
            old = h.sum[i];
        }
    }
    const ap_int<ACC> sum = old + ap_int<ACC>(product);
    if (valid) {
        acc[local] = sum;
    }
    for (int i = FORWARD - 1; i > 0; --i) {
#pragma HLS UNROLL
        h.address[i] = h.address[i - 1];
        h.sum[i] = h.sum[i - 1];
        h.valid[i] = h.valid[i - 1];
    }
    h.address[0] = local;
    h.sum[0] = sum;
    h.valid[0] = valid;
}

// Every PE clears its bank of this vector first: nothing a call left behind, finished or not,
// reaches a sum (a reset in the middle of a batch leaves no partial sums).
template <class Cfg>
void clear_banks(typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES]) {
    for (int a = 0; a < Cfg::ADDRESSES; ++a) {
#pragma HLS PIPELINE II=1
        for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
            acc[p][a] = 0;
        }
    }
}

// What a PE adds for an entry: x times its weight (times PE_SCALE, the shared weight of a
// positions-only layer that is no power of two, else 1), or, with a codebook (INDEXED), x times
// the value its index names: a table of constants, like the RTL's (fg_pe.v).
template <class Cfg, class Entry>
inline auto weigh(const Entry& e, std::false_type) -> decltype(e.product() * Cfg::PE_SCALE) {
#pragma HLS INLINE
    return e.product() * Cfg::PE_SCALE;
}
template <class Cfg, class Entry>
inline auto weigh(const Entry& e, std::true_type) -> decltype(e.x * Cfg::codebook[0]) {
#pragma HLS INLINE
    return e.x * Cfg::codebook[e.index()];
}

// The PEs (fg_pe.v): each takes one entry a cycle from the first of its K FIFOs that has one of
// this vector, at its own pace, and adds x * w into its bank; the vector is whole when every PE
// has had K end entries. A FIFO is not read past its end entry: in the DATAFLOW region a unit may
// already be issuing the next vector, whose entries belong to the next call (the RTL's PE takes
// the oldest vector's entries first). `acc` is this vector's bank: a PIPO buffer, so the drain of
// one vector overlaps the compute of the next (the RTL's two banks). Returns whether an entry
// (an end entry aside) reached a PE: what a stage that skips quiet vectors drains by.
template <class Cfg>
inline bool shared_pe_sums(hls::stream<typename Cfg::entry_t> (&entries)[Cfg::UNITS][Cfg::PES],
                           typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES]) {
#pragma HLS INLINE
    typedef typename Cfg::entry_t entry_t;
    clear_banks<Cfg>(acc);
    history<Cfg::SUM_BITS, Cfg::LOCAL_BITS> h[Cfg::PES];
    bool ended[Cfg::PES][Cfg::UNITS];  // FIFO u of PE p has passed this vector's end entry
#pragma HLS ARRAY_PARTITION variable=h type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=ended type=complete dim=0
    // fpgagen: not hot: once per vector, every PE at once (unrolled)
    for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
        clear_history(h[p]);
        // fpgagen: not hot: part of the loop above
        for (int u = 0; u < Cfg::UNITS; ++u) {
#pragma HLS UNROLL
            ended[p][u] = false;
        }
    }
    bool reached = false;
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter direction=RAW dependent=false
        bool whole = true;
        for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
            entry_t next;
            bool got = false;
            for (int u = 0; u < Cfg::UNITS; ++u) {
#pragma HLS UNROLL
                if (!got && !ended[p][u] && entries[u][p].read_nb(next)) {
                    got = true;
                    ended[p][u] = next.end;
                }
                whole = whole && ended[p][u];  // FIFO u is final for this cycle: only u sets it
            }
            accumulate<Cfg::ADDRESSES>(acc[p], h[p], got && !next.end, next.local, weigh<Cfg>(next, std::integral_constant<bool, Cfg::INDEXED>()));
            reached = reached || (got && !next.end);
        }
        done = whole;
    }
    return reached;
}

template <class Cfg>
void pes(hls::stream<typename Cfg::entry_t> (&entries)[Cfg::UNITS][Cfg::PES],
         typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES]) {
    shared_pe_sums<Cfg>(entries, acc);
}

// The PEs of a stage that skips quiet vectors (StagePlan.skips_quiet) also tell its drain, a flag
// a vector, that no entry reached them (`quiet`: the drain then reads no bank, as fg_stage.v's).
template <class Cfg>
void pes(hls::stream<typename Cfg::entry_t> (&entries)[Cfg::UNITS][Cfg::PES],
         typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES], hls::stream<bool>& quiet) {
    quiet.write(!shared_pe_sums<Cfg>(entries, acc));
}

// Private PEs (docs/engine.md, "Private PEs"): each of the K issue units has P PEs of its own, PE
// (u, p) fed by unit u's entries for lane p only, through a stream of DIRECT_DEPTH entries: no
// FIFO, the direct connection of an issue process and a PE process (the RTL's PE takes an entry in
// the cycle it arrives; a unit issues at most one entry a PE a cycle, and the PE never stalls).
const int DIRECT_DEPTH = 2;

// Every private PE clears its bank of this vector first (as clear_banks).
template <class Cfg>
void clear_private_banks(typename Cfg::acc_t acc[Cfg::UNITS][Cfg::PES][Cfg::ADDRESSES]) {
    for (int a = 0; a < Cfg::ADDRESSES; ++a) {
#pragma HLS PIPELINE II=1
        for (int u = 0; u < Cfg::UNITS; ++u) {
#pragma HLS UNROLL
            for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
                acc[u][p][a] = 0;
            }
        }
    }
}

// The K x P private PEs: PE (u, p) takes the entry of its one stream when there is one, a cycle at
// most, and adds x * w into its bank acc[u][p], which holds every output of lane p (ADDRESSES local
// addresses, as a shared PE's): a partial sum over the activations dealt to unit u. The vector is
// whole when every PE has had its end entry; a stream is not read past it (the next vector's
// entries belong to the next call, as in `pes`). `acc` is this vector's banks: a PIPO buffer.
// Returns whether an entry (an end entry aside) reached a PE, as `shared_pe_sums`.
template <class Cfg>
inline bool private_pe_sums(hls::stream<typename Cfg::entry_t> (&entries)[Cfg::UNITS][Cfg::PES],
                            typename Cfg::acc_t acc[Cfg::UNITS][Cfg::PES][Cfg::ADDRESSES]) {
#pragma HLS INLINE
    typedef typename Cfg::entry_t entry_t;
    clear_private_banks<Cfg>(acc);
    history<Cfg::SUM_BITS, Cfg::LOCAL_BITS> h[Cfg::UNITS][Cfg::PES];
    bool ended[Cfg::UNITS][Cfg::PES];  // PE (u, p) has had this vector's end entry
#pragma HLS ARRAY_PARTITION variable=h type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=ended type=complete dim=0
    // fpgagen: not hot: once per vector, every PE at once (unrolled)
    for (int u = 0; u < Cfg::UNITS; ++u) {
#pragma HLS UNROLL
        // fpgagen: not hot: part of the loop above
        for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
            clear_history(h[u][p]);
            ended[u][p] = false;
        }
    }
    bool reached = false;
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter direction=RAW dependent=false
        bool whole = true;
        for (int u = 0; u < Cfg::UNITS; ++u) {
#pragma HLS UNROLL
            for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
                entry_t next;
                const bool got = !ended[u][p] && entries[u][p].read_nb(next);
                if (got) {
                    ended[u][p] = next.end;
                }
                whole = whole && ended[u][p];
                accumulate<Cfg::ADDRESSES>(acc[u][p], h[u][p], got && !next.end, next.local,
                                           weigh<Cfg>(next, std::integral_constant<bool, Cfg::INDEXED>()));
                reached = reached || (got && !next.end);
            }
        }
        done = whole;
    }
    return reached;
}

template <class Cfg>
void private_pes(hls::stream<typename Cfg::entry_t> (&entries)[Cfg::UNITS][Cfg::PES],
                 typename Cfg::acc_t acc[Cfg::UNITS][Cfg::PES][Cfg::ADDRESSES]) {
    private_pe_sums<Cfg>(entries, acc);
}

// ... and with the flag a vector of a stage that skips quiet vectors, as `pes`.
template <class Cfg>
void private_pes(hls::stream<typename Cfg::entry_t> (&entries)[Cfg::UNITS][Cfg::PES],
                 typename Cfg::acc_t acc[Cfg::UNITS][Cfg::PES][Cfg::ADDRESSES], hls::stream<bool>& quiet) {
    quiet.write(!private_pe_sums<Cfg>(entries, acc));
}

// The bias of lane d of drain row r of a dataflow layer (output r * DRAIN_LANES + d): its table's
// row r, or its one row when every output's bias is one value (a constant, no ROM).
template <class Cfg>
inline typename Cfg::bias_t bias_of(int r, int d) {
#pragma HLS INLINE
    return Cfg::bias[Cfg::BIAS_ROWS == 1 ? 0 : r][d];
}

// Lane p's sum at local address a, as the drain reads it: a shared PE's bank word, or private PEs'
// (K units' partial sums added; Vitis balances the unrolled sum into a tree). A partial sum may
// wrap in the banks' width, but the whole sum fits it, so the wrapped sum of the parts is the whole
// (docs/numerics.md): the shared stage's.
template <class Cfg>
inline typename Cfg::acc_t lane_sum(const typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES], int p, int a) {
#pragma HLS INLINE
    return acc[p][a];
}

template <class Cfg>
inline typename Cfg::acc_t lane_sum(const typename Cfg::acc_t acc[Cfg::UNITS][Cfg::PES][Cfg::ADDRESSES], int p, int a) {
#pragma HLS INLINE
    typename Cfg::acc_t sum = 0;
    for (int u = 0; u < Cfg::UNITS; ++u) {
#pragma HLS UNROLL
        sum += acc[u][p][a];
    }
    return sum;
}

// The drain (fg_stage.v): a drain row a cycle (`Banks`: shared PEs' banks, or private PEs' per
// unit, whose sums lane_sum adds), then an end word per group. Row r is local address
// r / DRAIN_STEPS of group r % DRAIN_STEPS of DRAIN_LANES PEs: its lane d is PE
// (r % DRAIN_STEPS) * DRAIN_LANES + d, output r * DRAIN_LANES + d (DRAIN_STEPS is a power of two:
// the row's low bits pick each lane's PE, a DRAIN_STEPS:1 multiplexer before its requantizer). The
// row's outputs that exist (none past N_OUT) go into the groups' words, group c lanes c * GROUP
// onwards (a group without a nonzero output writes none). A `quiet` vector (of a stage that skips
// them: no entry reached a PE, so every output is zero) writes its end words alone and reads no
// bank. The PEs clear a bank before they add to it (`clear_banks`), not the drain, so a bank the
// drain skipped is as clear for its next vector as one it read.
template <class Cfg, class Banks>
inline void drain_rows(const Banks& acc, bool quiet, hls::stream<typename Cfg::word_t> (&words)[Cfg::UNITS]) {
#pragma HLS INLINE
    const int D = Cfg::DRAIN_LANES, G = Cfg::GROUP;
    const int rows = quiet ? 0 : Cfg::DRAIN_ROWS;
    for (int r = 0; r <= rows; ++r) {
#pragma HLS PIPELINE II=1
        if (r == rows) {
            for (int c = 0; c < Cfg::UNITS; ++c) {
#pragma HLS UNROLL
                words[c].write(end_word<typename Cfg::word_t, G>());
            }
        } else {
            const int a = r / Cfg::DRAIN_STEPS, first = (r % Cfg::DRAIN_STEPS) * D;  // the row's address, its group's PE 0
            act_t y[D];
            bool exists[D];
#pragma HLS ARRAY_PARTITION variable=y type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=exists type=complete dim=1
            for (int d = 0; d < D; ++d) {
#pragma HLS UNROLL
                exists[d] = r * D + d < Cfg::N_OUT;
                y[d] = requantize<Cfg::ACC_BITS>(scaled<Cfg>(lane_sum<Cfg>(acc, first + d, a)), bias_of<Cfg>(r, d),
                                                 Cfg::SHIFT, Cfg::LO, Cfg::HI);
            }
            for (int c = 0; c < Cfg::UNITS; ++c) {
#pragma HLS UNROLL
                const typename Cfg::word_t word = group_word<typename Cfg::word_t, G, D>(y, exists, c * G, r);
                if (word.count != 0) words[c].write(word);
            }
        }
    }
}

template <class Cfg, class Banks>
void drain_words(const Banks& acc, hls::stream<typename Cfg::word_t> (&words)[Cfg::UNITS]) {
    drain_rows<Cfg>(acc, false, words);
}

// The drain of a stage that skips quiet vectors: the PEs' flag of this vector first.
template <class Cfg, class Banks>
void drain_words(const Banks& acc, hls::stream<bool>& quiet, hls::stream<typename Cfg::word_t> (&words)[Cfg::UNITS]) {
    drain_rows<Cfg>(acc, quiet.read(), words);
}

// The rotation of local address a's outputs of the model's last layer (0 for a stage in place,
// whose table has one entry).
template <class Cfg>
inline int rotation_of(int a) {
#pragma HLS INLINE
    return Cfg::rotation[Cfg::ROTATIONS == 1 ? 0 : a];
}

// A dense output beat of P values, zero where no output exists, TLAST on a vector's last. The model's
// last layer may be rotated over its PEs (fg_dense.v): place q takes PE (q + rotation) mod P's value.
template <class Beat, int P>
inline Beat dense_beat(const act_t y[P], const bool exists[P], bool last, int rotation) {
#pragma HLS INLINE
    Beat beat;
    for (int q = 0; q < P; ++q) {
#pragma HLS UNROLL
        const int p = q + rotation < P ? q + rotation : q + rotation - P;
        beat.data.range(16 * q + 15, 16 * q) = exists[p] ? y[p] : act_t(0);
    }
    beat.keep = -1;
    beat.strb = -1;
    beat.last = last ? 1 : 0;
    return beat;
}

// The model's last layer drains dense beats of P values, zeros past N_OUT, TLAST on the last: all
// P lanes a cycle, so its drain rows are its local addresses.
template <class Cfg, class Banks, class Beat>
void drain_dense(const Banks& acc, hls::stream<Beat>& out) {
    static_assert(Cfg::DRAIN_LANES == Cfg::PES, "the model's last layer drains all P lanes a cycle");
    const int P = Cfg::PES;
    for (int a = 0; a < Cfg::ADDRESSES; ++a) {
#pragma HLS PIPELINE II=1
        act_t y[P];
        bool exists[P];
#pragma HLS ARRAY_PARTITION variable=y type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=exists type=complete dim=1
        for (int p = 0; p < P; ++p) {
#pragma HLS UNROLL
            y[p] = requantize<Cfg::ACC_BITS>(scaled<Cfg>(lane_sum<Cfg>(acc, p, a)), bias_of<Cfg>(a, p), Cfg::SHIFT,
                                             Cfg::LO, Cfg::HI);
            exists[p] = a * P + p < Cfg::N_OUT;
        }
        out.write(dense_beat<Beat, P>(y, exists, a == Cfg::ADDRESSES - 1, rotation_of<Cfg>(a)));
    }
}

// Stacked banks (fg_pe.v, STACKED): both banks of a PE in one memory, whose ports the RTL's MAC
// and drain take in turn. Here one process runs the PEs on a vector into its bank, then drains
// it, so its one bank is never read by two processes (no PIPO, whose two buffers would be the two
// memories stacking saves). A stage that skips quiet vectors (SKIPS_QUIET) drains a vector that
// reached no PE by its end words alone, as `drain_words` does (the PEs clear the bank before every
// vector, skipped or not).
template <class Cfg>
void pes_then_drain_words(hls::stream<typename Cfg::entry_t> (&entries)[Cfg::UNITS][Cfg::PES],
                          hls::stream<typename Cfg::word_t> (&words)[Cfg::UNITS]) {
    typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES];
#pragma HLS ARRAY_PARTITION variable=acc type=complete dim=1
    const bool reached = shared_pe_sums<Cfg>(entries, acc);
    drain_rows<Cfg>(acc, Cfg::SKIPS_QUIET && !reached, words);
}

template <class Cfg, class Beat>
void pes_then_drain_dense(hls::stream<typename Cfg::entry_t> (&entries)[Cfg::UNITS][Cfg::PES], hls::stream<Beat>& out) {
    typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES];
#pragma HLS ARRAY_PARTITION variable=acc type=complete dim=1
    pes<Cfg>(entries, acc);
    drain_dense<Cfg>(acc, out);
}

// ---------------------------------------------------------------------------------------------
// Load phase of a dataflow stage whose weights are in UltraRAM (fg_stage.v, LOADED), which the
// bitstream cannot initialize: at a batch's start its link of the load chain brings it the load
// image from its rows on (the loaded stages before it kept theirs), a row a beat. It keeps the
// first BEATS beats, PE p's slot in bits [p*SLOT_BITS, (p+1)*SLOT_BITS) of a beat, into every
// unit's copy of its weights, and passes the rest on to the next loaded stage.
template <class Cfg, class Beat>
void load_rows(hls::stream<Beat>& load) {
    for (int t = 0; t < Cfg::BEATS; ++t) {
#pragma HLS PIPELINE II=1
        const Beat beat = load.read();
        for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
            const typename Cfg::slot_t slot = static_cast<typename Cfg::slot_t>(
                beat.range(Cfg::SLOT_BITS * p + Cfg::SLOT_BITS - 1, Cfg::SLOT_BITS * p).to_uint64());
            for (int u = 0; u < Cfg::UNITS; ++u) {
#pragma HLS UNROLL
                Cfg::rom[u][t][p] = slot;
            }
        }
    }
}

// The rest of the load chain's beats, on to the next loaded stage.
template <int BEATS, class Beat>
void pass_on(hls::stream<Beat>& load, hls::stream<Beat>& next) {
    for (int t = 0; t < BEATS; ++t) {
#pragma HLS PIPELINE II=1
        next.write(load.read());
    }
}

// ---------------------------------------------------------------------------------------------
// Sequential stage (fg_seq_stage.v): one engine of P PEs runs the stage's layers, a pass per layer,
// weight rows read from off chip. A pass is a DATAFLOW region of source -> row requests -> AXI
// reads -> MACs; the drain follows it (its outputs are the next pass's input, through the
// loop-back stream: inside one region that would be a feedback edge, which DATAFLOW forbids).

// Where one layer's tables and weights are, and how it requantizes (the RTL's descriptor).
struct seq_layer {
    unsigned n_out;
    unsigned addresses;  // ceil(n_out / P): local addresses per PE
    unsigned rows;       // first entry of the layer in the stage's row table
    unsigned bias;       // first local address of the layer in the stage's bias table
    unsigned base;       // first beat of the layer in the off-chip image (4 KB aligned)
    unsigned shift;
    int lo;
    int hi;
};

// `part` into bits [lo, lo + width) of `whole`, in fields of at most 64 bits (the widths are
// powers of two of at least 8 bits). Wiring only.
template <class Whole, class Part>
void place(Whole& whole, int lo, const Part& part) {
#pragma HLS INLINE
    const int FIELD = Part::width < 64 ? Part::width : 64;
    for (int k = 0; k < Part::width; k += FIELD) {
#pragma HLS UNROLL
        whole.range(lo + k + FIELD - 1, lo + k) = part.range(k + FIELD - 1, k).to_uint64();
    }
}

// A beat the stage takes: a share from each of its CHANNELS memory channels, channel 0 lowest
// (channel c holds the slots of PEs c * P / CHANNELS .., or that share of the tables' fields).
template <class Cfg>
typename Cfg::beat_t joined_beat(hls::stream<typename Cfg::port_t> (&shares)[Cfg::CHANNELS]) {
#pragma HLS INLINE
    typename Cfg::beat_t beat = 0;
    for (int c = 0; c < Cfg::CHANNELS; ++c) {
#pragma HLS UNROLL
        place(beat, Cfg::port_t::width * c, shares[c].read());
    }
    return beat;
}

// The load phase's reads on one channel: the first LOAD_BEATS beats of its image, in one burst.
template <class Cfg>
void seq_read_tables(const typename Cfg::port_t* weights, hls::stream<typename Cfg::port_t>& shares) {
    for (int t = 0; t < Cfg::LOAD_BEATS; ++t) {
#pragma HLS PIPELINE II=1
        shares.write(weights[t]);
    }
}

// A beat of the load phase's tables: TABLE_PARTS beats, the first lowest.
template <class Cfg>
ap_uint<32 * Cfg::PES> table_beat(hls::stream<typename Cfg::port_t> (&shares)[Cfg::CHANNELS]) {
#pragma HLS INLINE
    ap_uint<32 * Cfg::PES> beat = 0;
    for (int part = 0; part < Cfg::TABLE_PARTS; ++part) {
#pragma HLS UNROLL
        place(beat, Cfg::beat_t::width * part, joined_beat<Cfg>(shares));
    }
    return beat;
}

// The load phase (fg_seq_stage.v): the stage's row table and biases from the start of its images.
// First ROW_TABLE_BEATS beats of row-table entries `start << COUNT_BITS | beats`, one per 32-bit
// field, P to a beat; then the bias rows, each of P values in BIAS_WORDS 32-bit words, low first.
// Those beats of the tables are TABLE_PARTS beats each, every beat a share from each channel.
template <class Cfg>
void load_tables(hls::stream<typename Cfg::port_t> (&shares)[Cfg::CHANNELS]) {
    const int VALUE = 32 * Cfg::BIAS_WORDS;
    int row = 0;
    // fpgagen: not hot: once per batch, one beat of entries per iteration
    for (int t = 0; t < Cfg::ROW_TABLE_BEATS; ++t) {
        const ap_uint<32 * Cfg::PES> beat = table_beat<Cfg>(shares);
        for (int q = 0; q < Cfg::PES; ++q) {
#pragma HLS PIPELINE II=1
            if (row < Cfg::ROWS) {
                const ap_uint<32> entry = beat.range(32 * q + 31, 32 * q);
                Cfg::row_beats[row] = entry.range(Cfg::COUNT_BITS - 1, 0).to_uint();
                Cfg::row_start[row] = entry.range(31, Cfg::COUNT_BITS).to_uint();
                ++row;
            }
        }
    }
    // A beat a cycle: a bias row is ROW_BEATS of them, its bytes in order.
    const int BYTES = 4 * Cfg::PES / Cfg::TABLE_PARTS;
    const int VALUE_BYTES = VALUE / 8;
    const int ROW_BEATS = Cfg::BIAS_WORDS * Cfg::TABLE_PARTS;
    unsigned long long value[Cfg::PES] = {};  // the bias row so far
#pragma HLS ARRAY_PARTITION variable=value type=complete dim=1
    for (int u = 0; u < Cfg::BIAS_ROWS * ROW_BEATS; ++u) {
#pragma HLS PIPELINE II=1
        const typename Cfg::beat_t beat = joined_beat<Cfg>(shares);
        const int b = u % ROW_BEATS;  // the row's b-th beat
        for (int k = 0; k < BYTES; ++k) {
#pragma HLS UNROLL
            const int at = b * BYTES + k;  // the row's at-th byte: byte at % VALUE_BYTES of value at / VALUE_BYTES
            const unsigned long long byte = beat.range(8 * k + 7, 8 * k).to_uint64();
            const int shift = 8 * (at % VALUE_BYTES);
            value[at / VALUE_BYTES] = (shift == 0 ? 0ULL : value[at / VALUE_BYTES]) | (byte << shift);
        }
        if (b == ROW_BEATS - 1) {
            for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
                // sign-extended from its VALUE bits
                const long long extended = static_cast<long long>(value[p] << (64 - VALUE)) >> (64 - VALUE);
                Cfg::bias[u / ROW_BEATS][p] = typename Cfg::bias_t(extended);
            }
        }
    }
}

// A row read {end, first beat, beats}, and the activation that waits for its beats.
template <int COUNT_BITS>
struct request {
    bool end;
    unsigned beat;
    ap_uint<COUNT_BITS> beats;
};

template <int COUNT_BITS>
struct waiting {
    bool end;
    ap_uint<COUNT_BITS> beats;
    act_t x;
};

// The pass's activations: the input channel's S sub-channels (merged) for the first layer, the
// loop-back items after.
template <class Cfg, class Item>
void seq_source(hls::stream<Item> (&in)[Cfg::IN_SUBS], hls::stream<typename Cfg::loop_item_t>& loop,
                hls::stream<typename Cfg::pass_item_t> (&items)[1], bool first) {
    if (first) {
        merge<Cfg::IN_SUBS, 1>(in, items);
    } else {
        for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
            const typename Cfg::loop_item_t next = loop.read();
            items[0].write(next.end ? end_item<typename Cfg::pass_item_t>()
                                    : value_item<typename Cfg::pass_item_t>(next.index.to_uint(), next.value));
            done = next.end;
        }
    }
}

// Row lookup: a row with beats becomes a read request to every channel and a waiting activation.
template <class Cfg>
void seq_requests(hls::stream<typename Cfg::pass_item_t> (&items)[1],
                  hls::stream<typename Cfg::request_t> (&requests)[Cfg::CHANNELS], hls::stream<typename Cfg::waiting_t>& waits,
                  const seq_layer& layer) {
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
        const typename Cfg::pass_item_t next = items[0].read();
        const unsigned at = layer.rows + next.index.to_uint();
        typename Cfg::request_t read;
        read.end = next.end;
        read.beat = layer.base + Cfg::row_start[at];
        read.beats = Cfg::row_beats[at];
        typename Cfg::waiting_t wait;
        wait.end = next.end;
        wait.beats = read.beats;
        wait.x = next.value;
        if (next.end || read.beats != 0) {
            for (int c = 0; c < Cfg::CHANNELS; ++c) {
#pragma HLS UNROLL
                requests[c].write(read);
            }
            waits.write(wait);
        }
        done = next.end;
    }
}

// AXI reads on one channel: every requested beat's share, in order, one a cycle. The address of a
// row's beats counts up by one, so Vitis makes bursts of a row's beats, and the loop never waits
// for a read's data before the next one (num_read_outstanding on the port).
template <class Cfg>
void seq_read(hls::stream<typename Cfg::request_t>& requests, const typename Cfg::port_t* weights,
              hls::stream<typename Cfg::port_t>& shares) {
    unsigned beat = 0, left = 0;
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
        if (left == 0) {
            const typename Cfg::request_t next = requests.read();
            beat = next.beat;
            left = next.beats;
            done = next.end;
        }
        if (!done) {
            shares.write(weights[beat]);
            ++beat;
            --left;
        }
    }
}

// MACs: each beat meets its row's activation; every valid slot adds x times its weight (or times the
// stage's shared weight: `weigh`) into its PE's bank.
template <class Cfg>
void seq_mac(hls::stream<typename Cfg::waiting_t>& waits, hls::stream<typename Cfg::port_t> (&shares)[Cfg::CHANNELS],
             typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES]) {
    const int SLOT = 1 + Cfg::SLOT_LOCAL_BITS + Cfg::SLOT_WEIGHT_BITS;
    clear_banks<Cfg>(acc);
    history<Cfg::ACC_BITS, Cfg::LOCAL_BITS> h[Cfg::PES];
#pragma HLS ARRAY_PARTITION variable=h type=complete dim=0
    // fpgagen: not hot: once per pass, every PE at once (unrolled)
    for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
        clear_history(h[p]);
    }
    unsigned left = 0;
    act_t x = 0;
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter direction=RAW dependent=false
        if (left == 0) {
            const typename Cfg::waiting_t next = waits.read();
            left = next.beats;
            x = next.x;
            done = next.end;
        }
        if (!done) {
            const typename Cfg::beat_t beat = joined_beat<Cfg>(shares);
            for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
                bool valid;
                typename Cfg::slot_t slot(false, x);
                slot.unpack_slot(beat.range(SLOT * p + SLOT - 1, SLOT * p).to_uint(), valid);
                accumulate<Cfg::ADDRESSES>(acc[p], h[p], valid, ap_uint<Cfg::LOCAL_BITS>(slot.local),
                                           weigh<Cfg>(slot, std::false_type()));
            }
            --left;
        }
    }
}

// The outputs of local address `a` of a pass: the layer's bias and requantization, and which exist.
template <class Cfg>
inline void seq_outputs(const typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES], const seq_layer& layer, unsigned a,
                        act_t y[Cfg::PES], bool exists[Cfg::PES]) {
#pragma HLS INLINE
    for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
        exists[p] = a * Cfg::PES + p < layer.n_out;
        y[p] = requantize<Cfg::ACC_BITS>(scaled<Cfg>(acc[p][a]), Cfg::bias[layer.bias + a][p], layer.shift, layer.lo,
                                         layer.hi);
    }
}

// Where a pass's drain sends dense beats: the output stream, or nowhere for a stage whose last
// layer is not the model's (it never drains dense).
struct no_output {};

template <int P, class Beat>
inline void write_dense(hls::stream<Beat>& out, const act_t y[P], const bool exists[P], bool last, int rotation) {
#pragma HLS INLINE
    out.write(dense_beat<Beat, P>(y, exists, last, rotation));
}

template <int P>
inline void write_dense(no_output& /* never drains dense */, const act_t /* y */[P], const bool /* exists */[P],
                        bool /* last */, int /* rotation */) {}

// The drain of a pass: one local address of every PE a cycle; a word of its P outputs for the
// serializer when one is nonzero, or, in the pass of the model's last layer (`dense`), a dense
// beat of them to `out`; after the last address, an end word (the end of the pass).
template <class Cfg, class Dense>
void seq_drain(const typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES], const seq_layer& layer, bool dense,
               hls::stream<typename Cfg::word_t>& words, Dense& out) {
    for (unsigned a = 0; a <= layer.addresses; ++a) {
#pragma HLS PIPELINE II=1
        if (a == layer.addresses) {
            words.write(end_word<typename Cfg::word_t, Cfg::PES>());
        } else {
            act_t y[Cfg::PES];
            bool exists[Cfg::PES];
#pragma HLS ARRAY_PARTITION variable=y type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=exists type=complete dim=1
            seq_outputs<Cfg>(acc, layer, a, y, exists);
            if (dense) {
                write_dense<Cfg::PES>(out, y, exists, a + 1 == layer.addresses, rotation_of<Cfg>(a));
            } else {
                const typename Cfg::word_t word = group_word<typename Cfg::word_t, Cfg::PES, Cfg::PES>(y, exists, 0, a);
                if (word.count != 0) words.write(word);
            }
        }
    }
}

// The serializer of a sequential stage: a pass's words into items for the loop-back stream, or
// (`last`) for the output sub-channel. `Out`: the output sub-channel's item, or (a stage that
// drains dense beats, whose last pass sends only the end word here) no output at all.
template <int INDEX_BITS>
inline void write_out(hls::stream<item<INDEX_BITS> >& out, bool closing, unsigned index, act_t value) {
#pragma HLS INLINE
    out.write(closing ? end_item<item<INDEX_BITS> >() : value_item<item<INDEX_BITS> >(index, value));
}

inline void write_out(no_output& /* the beats went out from the drain */, bool /* closing */, unsigned /* index */,
                      act_t /* value */) {}

template <class Cfg, class Out>
void seq_serialize(hls::stream<typename Cfg::word_t>& words, bool last, hls::stream<typename Cfg::loop_item_t>& loop,
                   Out& out) {
    typename Cfg::word_t held = end_word<typename Cfg::word_t, Cfg::PES>();
    ap_uint<Cfg::PES> pending = 0;
    for (bool done = false; !done;) {
#pragma HLS PIPELINE II=1
        bool emit = false, closing = false;
        unsigned index = 0;
        act_t value = 0;
        if (pending == 0) {
            held = words.read();
            pending = held.mask;
            closing = held.end;
            done = held.end;
        }
        if (pending != 0) {
            const unsigned position = lowest<Cfg::PES>(pending);
            index = held.base.to_uint() * Cfg::PES + position;
            value = held.values[position];
            pending = pending & (pending - 1);  // the lowest set bit, this position's, goes
            emit = true;
        }
        if ((emit || closing) && !last) {
            loop.write(closing ? end_item<typename Cfg::loop_item_t>() : value_item<typename Cfg::loop_item_t>(index, value));
        }
        if ((emit || closing) && last) {
            write_out(out, closing, index, value);
        }
    }
}

// Whether a stage's output is dense beats (the model's last layer) or items (`no_output` here).
template <class Dense>
struct drains_dense {
    static const bool value = true;
};
template <>
struct drains_dense<no_output> {
    static const bool value = false;
};

// A pass's drain: a DATAFLOW region of the drain and the serializer. A stage sends its output
// either as dense beats from the drain (`dense`, the model's last layer, with `items` a
// no_output) or as the serializer's items (`items`, the output sub-channel, with `dense` a
// no_output); the passes before the last go to the loop-back stream.
template <class Cfg, class Dense, class Items>
void seq_drain_pass(const typename Cfg::acc_t acc[Cfg::PES][Cfg::ADDRESSES], const seq_layer& layer, bool last,
                    hls::stream<typename Cfg::loop_item_t>& loop, Dense& dense, Items& items) {
#pragma HLS DATAFLOW
    hls::stream<typename Cfg::word_t> words;
#pragma HLS STREAM variable=words depth=Cfg::WORD_DEPTH
    seq_drain<Cfg>(acc, layer, last && drains_dense<Dense>::value, words, dense);
    seq_serialize<Cfg>(words, last, loop, items);
}

}  // namespace fpgagen

#endif
