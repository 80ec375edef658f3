// fpgagen engine library: the building blocks of docs/engine.md as Vitis HLS C++ templates.
//
// A design is a DATAFLOW region of stages linked by channels. A channel of B lanes is an array of
// B lane streams plus one mask stream of B-bit words. Lane b carries the nonzero activations whose
// index is b modulo B, in increasing order, the lane's final one of the vector marked `last`; a lane
// without nonzero activations carries nothing. After a whole vector the producer writes its mask
// (bit b: lane b holds items of that vector), and the consumer reads the mask first, then only the
// lanes it names. Output j of a layer belongs to lane j mod P, at local address j div P. The
// generated top function instantiates these templates with each layer's sizes (a `cfg` struct) and
// its tables (const arrays in weights/*.h); nothing here is specific to a model. The arithmetic is
// docs/numerics.md: exact integer sums, then a shift that rounds half up and a clamp.
#ifndef FPGAGEN_ENGINE_H
#define FPGAGEN_ENGINE_H

#include <stdint.h>

#include "ap_axi_sdata.h"
#include "ap_int.h"
#include "hls_stream.h"

namespace fpgagen {

// Activations travel as 16-bit values whatever the precision (activation widths are at most 16).
typedef ap_int<16> act_t;

// One entry of a lane: a nonzero activation and its index; `last` on the lane's final one of a vector.
template <int INDEX_BITS>
struct item {
    ap_uint<INDEX_BITS> index;
    act_t value;
    bool last;
};

template <class Item>
inline Item activation(unsigned index, act_t value, bool last = false) {
    Item entry;
    entry.index = index;
    entry.value = value;
    entry.last = last;
    return entry;
}

// ---------------------------------------------------------------------------------------------
// The producer's side of a channel. A lane's item is only known to be its last when the next one
// (or the end of the vector) comes, so each lane's newest item waits in `held` until then.

template <int B, class Item>
inline void clear_held(Item held[B], bool holding[B]) {
    for (int b = 0; b < B; ++b) {
#pragma HLS UNROLL
        held[b] = activation<Item>(0, 0);
        holding[b] = false;
    }
}

// Lane b's next item: the one it displaces was not the lane's last.
template <int B, class Item>
inline void put(hls::stream<Item> (&lanes)[B], Item held[B], bool holding[B], int b, const Item& next) {
#pragma HLS INLINE
    if (holding[b]) {
        lanes[b].write(held[b]);
    }
    held[b] = next;
    holding[b] = true;
}

// The end of a vector: the held items are their lanes' last, then the mask of the lanes written.
template <int B, class Item>
inline void close_vector(hls::stream<Item> (&lanes)[B], hls::stream<ap_uint<B> >& mask, Item held[B], bool holding[B]) {
#pragma HLS INLINE
    ap_uint<B> written = 0;
    for (int b = 0; b < B; ++b) {
#pragma HLS UNROLL
        if (holding[b]) {
            Item closing = held[b];
            closing.last = true;
            lanes[b].write(closing);
            written = written | (ap_uint<B>(1) << b);
            holding[b] = false;
        }
    }
    mask.write(written);
}

// The consumer's priority encoder: the lowest lane whose bit is set in a nonzero mask.
template <int B>
inline int lowest_lane(ap_uint<B> pending) {
    int lane = 0;
    for (int b = B - 1; b >= 0; --b) {
#pragma HLS UNROLL
        if (((pending >> b) & 1) != 0) {
            lane = b;
        }
    }
    return lane;
}

// The item type a drain holds back for its output: the output lanes' own, or none (an unused
// placeholder) when it writes dense beats to the model's output stream.
template <class... Out>
struct drain_item {
    typedef item<1> type;
};
template <class Item, int P, class Mask>
struct drain_item<hls::stream<Item>[P], Mask> {
    typedef Item type;
};

// A row of the weight layout to issue: `beats` beats from `start`, each multiplied by `x`.
template <class Start, class Beats>
struct row_task {
    Start start;
    Beats beats;
    act_t x;
    bool last;  // end of the vector's activations
};

// One lane's slot of a beat: valid << (LB + WB) | local << WB | (weight & (2^WB - 1)). The
// off-chip words are the case WB = 16, LB = 15.
template <int WB, int LB, class Word>
inline void unpack(Word word, bool& valid, unsigned& local, ap_int<WB>& weight) {
    weight = ap_uint<WB>(word & ((Word(1) << WB) - 1));
    local = static_cast<unsigned>((word >> WB) & ((Word(1) << LB) - 1));
    valid = ((word >> (WB + LB)) & 1) != 0;
}

// Accumulator writes still in flight, per lane: the read of a beat can come before the writes of
// the few beats ahead of it have landed. Each lane keeps its last FORWARD writes (address and sum)
// and a beat whose address matches one takes the newest such sum instead of the memory's. This
// forwarding is what makes `DEPENDENCE inter false` on the accumulator true for a read-modify-write
// pipeline of up to FORWARD cycles. Within one row a lane never repeats an address
// (fpgagen.layout), so only the beats of neighbouring rows can collide.
const int FORWARD = 3;

template <int P, int ACC>
inline void clear_history(unsigned address[FORWARD][P], ap_int<ACC> sum[FORWARD][P], bool valid[FORWARD][P]) {
    for (int h = 0; h < FORWARD; ++h) {
#pragma HLS UNROLL
        for (int p = 0; p < P; ++p) {
#pragma HLS UNROLL
            address[h][p] = 0;
            sum[h][p] = 0;
            valid[h][p] = false;
        }
    }
}

// One beat: every lane with a valid slot adds x * w into its accumulator at the slot's address.
template <int P, int ADDRESSES, int ACC, int WB, int LB, class Word>
inline void multiply_accumulate(ap_int<ACC> acc[P][ADDRESSES], unsigned fwd_address[FORWARD][P],
                                ap_int<ACC> fwd_sum[FORWARD][P], bool fwd_valid[FORWARD][P], const Word slots[P],
                                act_t x) {
#pragma HLS INLINE
    for (int p = 0; p < P; ++p) {
#pragma HLS UNROLL
        bool valid;
        unsigned local;
        ap_int<WB> w = 0;
        unpack<WB, LB>(slots[p], valid, local, w);
        ap_int<ACC> old = acc[p][local];
        for (int h = FORWARD - 1; h >= 0; --h) {  // the newest matching write (h = 0) wins
#pragma HLS UNROLL
            if (fwd_valid[h][p] && fwd_address[h][p] == local) {
                old = fwd_sum[h][p];
            }
        }
        const ap_int<ACC> sum = old + x * w;
        if (valid) {
            acc[p][local] = sum;
        }
        for (int h = FORWARD - 1; h > 0; --h) {
#pragma HLS UNROLL
            fwd_address[h][p] = fwd_address[h - 1][p];
            fwd_sum[h][p] = fwd_sum[h - 1][p];
            fwd_valid[h][p] = fwd_valid[h - 1][p];
        }
        fwd_address[0][p] = local;
        fwd_sum[0][p] = sum;
        fwd_valid[0][p] = valid;
    }
}

// docs/numerics.md: y = clamp((acc + bias + 2^(s-1)) >> s, lo, hi); >> is arithmetic, so the
// shift rounds half up. The accumulator width is the layer's exact worst case: nothing overflows.
template <int ACC, class Bias>
inline act_t requantize(ap_int<ACC> acc, Bias bias, int shift, int lo, int hi) {
    ap_int<ACC> total = acc + bias;
    if (shift > 0) {
        total = (total + (ap_int<ACC>(1) << (shift - 1))) >> shift;
    }
    return total < lo ? act_t(lo) : (total > hi ? act_t(hi) : act_t(total));
}

// ---------------------------------------------------------------------------------------------
// Where a drain goes, given as the trailing arguments `out...` of the functions below: the next
// stage's channel (lanes, mask: nonzero outputs only, each lane's newest held back in `held`), or
// the model's output stream (dense: one beat of P values per local address, TLAST on the last).

template <int P, class Item>
inline void emit(Item held[P], bool holding[P], const act_t y[P], unsigned address, unsigned /* addresses */, unsigned n_out,
                 hls::stream<Item> (&lanes)[P], hls::stream<ap_uint<P> >& /* mask: written at the end */) {
#pragma HLS INLINE
    for (int p = 0; p < P; ++p) {
#pragma HLS UNROLL
        const unsigned j = address * P + p;
        if (y[p] != 0 && j < n_out) {
            put<P>(lanes, held, holding, p, activation<Item>(j, y[p]));
        }
    }
}

template <int P, class Item>
inline void finish(Item held[P], bool holding[P], hls::stream<Item> (&lanes)[P], hls::stream<ap_uint<P> >& mask) {
#pragma HLS INLINE
    close_vector<P>(lanes, mask, held, holding);
}

template <int P, class Item, class Beat>
inline void emit(Item* /* held: a dense output writes every value at once */, bool* /* holding */, const act_t y[P],
                 unsigned address, unsigned addresses, unsigned /* n_out */, hls::stream<Beat>& out) {
#pragma HLS INLINE
    Beat beat;
    for (int p = 0; p < P; ++p) {
#pragma HLS UNROLL
        beat.data.range(16 * p + 15, 16 * p) = y[p];
    }
    beat.keep = -1;
    beat.strb = -1;
    beat.last = address + 1 == addresses ? 1 : 0;
    out.write(beat);
}

template <int P, class Item, class Beat>
inline void finish(Item* /* held */, bool* /* holding */, hls::stream<Beat>& /* out: TLAST has ended the vector */) {}

// Drain one local address of a bank in all PEs: requantize, clear, and emit the outputs.
template <int P, int ADDRESSES, int ACC, class Bias, class Item, class... Out>
inline void drain_address(ap_int<ACC> acc[P][ADDRESSES], const Bias bias[P][ADDRESSES], unsigned address, unsigned n_out, int shift,
                          int lo, int hi, Item held[P], bool holding[P], Out&... out) {
    act_t y[P];
#pragma HLS ARRAY_PARTITION variable=y type=complete dim=1
    for (int p = 0; p < P; ++p) {
#pragma HLS UNROLL
        const bool exists = address * P + p < n_out;
        y[p] = exists ? requantize<ACC>(acc[p][address], bias[p][address], shift, lo, hi) : act_t(0);
        acc[p][address] = 0;
    }
    emit<P>(held, holding, y, address, ADDRESSES, n_out, out...);
}

// ---------------------------------------------------------------------------------------------
// Input reader: ceil(N/K) AXI4-Stream beats of K 16-bit values per vector (x[t*K + k] in bits
// 16k+15..16k of beat t); nonzero values go to lane k, then the vector's mask.

template <int K, int N, class Item, class Beat>
void read_input(hls::stream<Beat>& x_in, hls::stream<Item> (&lanes)[K], hls::stream<ap_uint<K> >& mask, int batch) {
    Item held[K];
    bool holding[K];
#pragma HLS ARRAY_PARTITION variable=held type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=holding type=complete dim=1
    clear_held<K>(held, holding);
    for (int v = 0; v < batch; ++v) {
        for (int t = 0; t < (N + K - 1) / K; ++t) {
#pragma HLS PIPELINE II=1
            const Beat beat = x_in.read();
            for (int k = 0; k < K; ++k) {
#pragma HLS UNROLL
                const act_t x = beat.data.range(16 * k + 15, 16 * k);
                if (x != 0 && t * K + k < N) {
                    put<K>(lanes, held, holding, k, activation<Item>(t * K + k, x));
                }
            }
        }
        close_vector<K>(lanes, mask, held, holding);
    }
}

// ---------------------------------------------------------------------------------------------
// Dataflow stage: one layer on its own P PEs, weights in on-chip ROM. Two processes: the row
// reader turns activations into row tasks (the row table lookup), the compute-and-drain process
// issues the beats into one accumulator bank while it drains the other (the banks swap every
// vector, so a stage's interval is max(compute, drain), docs/engine.md).

// Per vector: the mask, then every item of the lanes it names, lowest lane first, then the
// end-of-vector task.
template <class Cfg, class Item>
void read_rows(hls::stream<Item> (&in)[Cfg::IN_LANES], hls::stream<ap_uint<Cfg::IN_LANES> >& in_mask,
               hls::stream<typename Cfg::task_t>& tasks, int batch, const typename Cfg::start_t row_start[Cfg::N_IN],
               const typename Cfg::beats_t row_beats[Cfg::N_IN]) {
    typedef typename Cfg::task_t task_t;
    for (int v = 0; v < batch; ++v) {
        ap_uint<Cfg::IN_LANES> pending = in_mask.read();
        while (pending != 0) {
#pragma HLS PIPELINE II=1
            const Item entry = in[lowest_lane<Cfg::IN_LANES>(pending)].read();
            if (entry.last) {
                pending = pending & (pending - 1);  // the lowest set bit, this lane's, goes
            }
            const unsigned i = entry.index.to_uint();
            task_t task;
            task.start = row_start[i];
            task.beats = row_beats[i];
            task.x = entry.value;
            task.last = false;
            tasks.write(task);
        }
        task_t done;
        done.start = 0;
        done.beats = 0;
        done.x = 0;
        done.last = true;
        tasks.write(done);
    }
}

// One vector's worth of the compute-and-drain loop: one beat (or one task) and one drain address
// per iteration. `fill` receives this vector's sums, `empty` holds the previous vector's.
template <class Cfg, class... Out>
void compute_and_drain(hls::stream<typename Cfg::task_t>& tasks, bool computing, bool draining,
                       ap_int<Cfg::ACC_BITS> fill[Cfg::PES][Cfg::ADDRESSES], ap_int<Cfg::ACC_BITS> empty[Cfg::PES][Cfg::ADDRESSES],
                       const typename Cfg::word_t rom[Cfg::BEATS][Cfg::PES],
                       const typename Cfg::bias_t bias[Cfg::PES][Cfg::ADDRESSES], Out&... out) {
#pragma HLS INLINE
    const int P = Cfg::PES;
    typename drain_item<Out...>::type held[P];
    bool holding[P];
#pragma HLS ARRAY_PARTITION variable=held type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=holding type=complete dim=1
    clear_held<P>(held, holding);
    unsigned fwd_address[FORWARD][P];
    ap_int<Cfg::ACC_BITS> fwd_sum[FORWARD][P];
    bool fwd_valid[FORWARD][P];
#pragma HLS ARRAY_PARTITION variable=fwd_address type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=fwd_sum type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=fwd_valid type=complete dim=0
    clear_history<P>(fwd_address, fwd_sum, fwd_valid);
    bool compute_done = !computing;
    unsigned beat = 0, beats_left = 0;
    act_t x = 0;
    bool drain_done = !draining;
    unsigned address = 0;
    while (!compute_done || !drain_done) {
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=fill type=inter direction=RAW dependent=false
        if (!compute_done) {
            if (beats_left == 0) {
                const typename Cfg::task_t task = tasks.read();
                compute_done = task.last;
                beat = task.start;
                beats_left = task.beats;
                x = task.x;
            }
            if (beats_left != 0) {
                multiply_accumulate<P, Cfg::ADDRESSES, Cfg::ACC_BITS, Cfg::WEIGHT_BITS, Cfg::LOCAL_BITS>(
                    fill, fwd_address, fwd_sum, fwd_valid, rom[beat], x);
                ++beat;
                --beats_left;
            }
        }
        if (!drain_done) {
            if (address < unsigned(Cfg::ADDRESSES)) {
                drain_address<P, Cfg::ADDRESSES, Cfg::ACC_BITS>(empty, bias, address, Cfg::N_OUT, Cfg::SHIFT, Cfg::LO, Cfg::HI,
                                                            held, holding, out...);
                ++address;
            } else {
                finish<P>(held, holding, out...);
                drain_done = true;
            }
        }
    }
}

template <class Cfg, class... Out>
void compute_and_drain_batch(hls::stream<typename Cfg::task_t>& tasks, int batch,
                             const typename Cfg::word_t rom[Cfg::BEATS][Cfg::PES],
                             const typename Cfg::bias_t bias[Cfg::PES][Cfg::ADDRESSES], Out&... out) {
    // Zero at configuration; every drain clears what it reads, so they stay zero between vectors.
    static ap_int<Cfg::ACC_BITS> bank0[Cfg::PES][Cfg::ADDRESSES];
    static ap_int<Cfg::ACC_BITS> bank1[Cfg::PES][Cfg::ADDRESSES];
#pragma HLS ARRAY_PARTITION variable=bank0 type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=bank1 type=complete dim=1
    for (int v = 0; v <= batch; ++v) {
        if (v % 2 == 0) {
            compute_and_drain<Cfg>(tasks, v < batch, v > 0, bank0, bank1, rom, bias, out...);
        } else {
            compute_and_drain<Cfg>(tasks, v < batch, v > 0, bank1, bank0, rom, bias, out...);
        }
    }
}

// `out...`: the next stage's lanes and mask, or the model's output stream.
template <class Cfg, class Item, class... Out>
void dataflow_layer(hls::stream<Item> (&in)[Cfg::IN_LANES], hls::stream<ap_uint<Cfg::IN_LANES> >& in_mask,
                    int batch, const typename Cfg::start_t row_start[Cfg::N_IN],
                    const typename Cfg::beats_t row_beats[Cfg::N_IN],
                    const typename Cfg::word_t rom[Cfg::BEATS][Cfg::PES],
                    const typename Cfg::bias_t bias[Cfg::PES][Cfg::ADDRESSES], Out&... out) {
#pragma HLS DATAFLOW
    hls::stream<typename Cfg::task_t> tasks("tasks");
#pragma HLS STREAM variable=tasks depth=Cfg::TASK_DEPTH
    read_rows<Cfg>(in, in_mask, tasks, batch, row_start, row_beats);
    compute_and_drain_batch<Cfg>(tasks, batch, rom, bias, out...);
}

// ---------------------------------------------------------------------------------------------
// Sequential stage: a run of layers on one shared engine of P PEs. Row tables, biases and the
// per-layer parameters stay on chip; weight beats stream from off-chip memory through an AXI4
// master, one burst per row with beats. Each vector goes through the layers one after another:
// the stage's input channel feeds the first, loop-back lanes the others, and the last drains to
// the stage's output (the next stage's lanes, or the model's output stream).

// Where one layer's tables and weights are, and how it requantizes.
struct seq_layer {
    unsigned rows;  // first entry of the layer in the stage's row tables
    unsigned bias;  // first local address of the layer in the stage's bias table
    unsigned base;  // first beat of the layer in the off-chip image (4 KB aligned)
    unsigned n_out;
    unsigned addresses;  // ceil(n_out / P): local addresses per PE
    int shift;
    int lo;
    int hi;
};

// Compute one layer of a sequential stage from a channel of `B` lanes into the accumulator.
template <class Cfg, int B, class Item>
void seq_compute(hls::stream<Item> (&in)[B], hls::stream<ap_uint<B> >& in_mask,
                 ap_int<Cfg::ACC_BITS> acc[Cfg::PES][Cfg::ADDRESSES], const typename Cfg::beat_t* weights,
                 const seq_layer& layer, const typename Cfg::start_t row_start[Cfg::ROWS],
                 const typename Cfg::beats_t row_beats[Cfg::ROWS]) {
    const int P = Cfg::PES;
    unsigned fwd_address[FORWARD][P];
    ap_int<Cfg::ACC_BITS> fwd_sum[FORWARD][P];
    bool fwd_valid[FORWARD][P];
#pragma HLS ARRAY_PARTITION variable=fwd_address type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=fwd_sum type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=fwd_valid type=complete dim=0
    clear_history<P>(fwd_address, fwd_sum, fwd_valid);
    ap_uint<B> pending = in_mask.read();
    while (pending != 0) {
        const Item entry = in[lowest_lane<B>(pending)].read();
        if (entry.last) {
            pending = pending & (pending - 1);
        }
        const unsigned row = layer.rows + entry.index.to_uint();
        const unsigned start = row_start[row];
        const unsigned beats = row_beats[row];
        // One AXI4 INCR burst per row: consecutive beats from the layer's base.
        const typename Cfg::beat_t* burst = weights + layer.base + start;
        const int SLOT = 1 + Cfg::SLOT_LOCAL_BITS + Cfg::SLOT_WEIGHT_BITS;
        for (unsigned t = 0; t < beats; ++t) {
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter direction=RAW dependent=false
            const typename Cfg::beat_t beat = burst[t];
            uint32_t slots[P];
#pragma HLS ARRAY_PARTITION variable=slots type=complete dim=1
            for (int p = 0; p < P; ++p) {
#pragma HLS UNROLL
                slots[p] = beat.range(SLOT * p + SLOT - 1, SLOT * p).to_uint();
            }
            multiply_accumulate<P, Cfg::ADDRESSES, Cfg::ACC_BITS, Cfg::SLOT_WEIGHT_BITS, Cfg::SLOT_LOCAL_BITS>(
                acc, fwd_address, fwd_sum, fwd_valid, slots, entry.value);
        }
    }
}

template <class Cfg, class... Out>
void seq_drain(ap_int<Cfg::ACC_BITS> acc[Cfg::PES][Cfg::ADDRESSES], const typename Cfg::bias_t bias[Cfg::PES][Cfg::BIAS_ROWS],
               const seq_layer& layer, Out&... out) {
    typename drain_item<Out...>::type held[Cfg::PES];
    bool holding[Cfg::PES];
#pragma HLS ARRAY_PARTITION variable=held type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=holding type=complete dim=1
    clear_held<Cfg::PES>(held, holding);
    for (unsigned a = 0; a < layer.addresses; ++a) {
#pragma HLS PIPELINE II=1
        act_t y[Cfg::PES];
#pragma HLS ARRAY_PARTITION variable=y type=complete dim=1
        for (int p = 0; p < Cfg::PES; ++p) {
#pragma HLS UNROLL
            const bool exists = a * Cfg::PES + p < layer.n_out;
            y[p] = exists ? requantize<Cfg::ACC_BITS>(acc[p][a], bias[p][layer.bias + a], layer.shift, layer.lo, layer.hi)
                          : act_t(0);
            acc[p][a] = 0;
        }
        emit<Cfg::PES>(held, holding, y, a, layer.addresses, layer.n_out, out...);
    }
    finish<Cfg::PES>(held, holding, out...);
}

// Runs the stage's layers for `batch` vectors. `loop`, `loop_mask`: the loop-back channel, declared
// by the caller with its FIFO depths. `out...`: the next stage's lanes and mask, or the model's
// output stream.
template <class Cfg, class Item, class LoopItem, class... Out>
void sequential_stage(hls::stream<Item> (&in)[Cfg::IN_LANES], hls::stream<ap_uint<Cfg::IN_LANES> >& in_mask,
                      hls::stream<LoopItem> (&loop)[Cfg::PES], hls::stream<ap_uint<Cfg::PES> >& loop_mask,
                      const typename Cfg::beat_t* weights, int batch,
                      const seq_layer layers[Cfg::LAYERS], const typename Cfg::start_t row_start[Cfg::ROWS],
                      const typename Cfg::beats_t row_beats[Cfg::ROWS],
                      const typename Cfg::bias_t bias[Cfg::PES][Cfg::BIAS_ROWS], Out&... out) {
    static ap_int<Cfg::ACC_BITS> acc[Cfg::PES][Cfg::ADDRESSES];
#pragma HLS ARRAY_PARTITION variable=acc type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=bias type=complete dim=1
    for (int v = 0; v < batch; ++v) {
        for (int l = 0; l < Cfg::LAYERS; ++l) {
            const seq_layer layer = layers[l];
            if (l == 0) {
                seq_compute<Cfg>(in, in_mask, acc, weights, layer, row_start, row_beats);
            } else {
                seq_compute<Cfg>(loop, loop_mask, acc, weights, layer, row_start, row_beats);
            }
            if (l == Cfg::LAYERS - 1) {
                seq_drain<Cfg>(acc, bias, layer, out...);
            } else {
                seq_drain<Cfg>(acc, bias, layer, loop, loop_mask);
            }
        }
    }
}

}  // namespace fpgagen

#endif
