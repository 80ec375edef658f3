// fpgagen testbench helpers: golden vectors from files, channels and AXI beats in and out, and the
// comparison that prints the one machine-readable mismatch line. Used by tb_<top>.cpp only.
//
// Vectors folder (fpgagen/vectors.py): x.bin and y<k>.bin, little-endian int16, one row per
// vector. Off-chip images: weights<k>.bin, little-endian beats of the port's width.
#ifndef FPGAGEN_TB_H
#define FPGAGEN_TB_H

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fpgagen_engine.h"

namespace fpgagen_tb {

typedef std::vector<int16_t> rows;  // (batch, n) row-major

inline bool read_bytes(const std::string& path, std::vector<unsigned char>& bytes) {
    std::ifstream file(path.c_str(), std::ios::binary);
    if (!file) {
        std::printf("ERROR cannot read %s\n", path.c_str());
        return false;
    }
    bytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    return true;
}

// A whole file of little-endian int16 rows of `n` values; the row count is the file's.
inline bool read_rows(const std::string& path, int n, rows& out, int& batch) {
    std::vector<unsigned char> bytes;
    if (!read_bytes(path, bytes)) {
        return false;
    }
    if (bytes.size() % (2 * static_cast<size_t>(n)) != 0) {
        std::printf("ERROR %s holds %zu bytes, not whole rows of %d int16 values\n", path.c_str(), bytes.size(), n);
        return false;
    }
    batch = static_cast<int>(bytes.size() / (2 * static_cast<size_t>(n)));
    out.resize(bytes.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
        out[i] = static_cast<int16_t>(static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)));
    }
    return true;
}

// The model input and every layer's golden output.
struct golden {
    int batch;
    int n_in;
    std::vector<int> n_out;
    rows x;
    std::vector<rows> y;

    // The golden input of layer `index`: the model input, or the previous layer's output.
    const int16_t* input(int index) const { return index == 0 ? x.data() : y[index - 1].data(); }
    int input_size(int index) const { return index == 0 ? n_in : n_out[index - 1]; }
};

inline bool load_golden(const std::string& folder, int n_in, const int* n_out, int layers, golden& g) {
    g.n_in = n_in;
    g.n_out.assign(n_out, n_out + layers);
    if (!read_rows(folder + "/x.bin", n_in, g.x, g.batch)) {
        return false;
    }
    g.y.resize(layers);
    for (int k = 0; k < layers; ++k) {
        int batch = 0;
        const std::string path = folder + "/y" + std::to_string(k) + ".bin";
        if (!read_rows(path, n_out[k], g.y[k], batch)) {
            return false;
        }
        if (batch != g.batch) {
            std::printf("ERROR %s has %d vectors, x.bin has %d\n", path.c_str(), batch, g.batch);
            return false;
        }
    }
    return true;
}

// An off-chip image: `beats` little-endian beats of BYTES bytes (byte k in bits 8k+7..8k).
template <int BYTES, class Beat>
bool load_weights(const std::string& path, size_t beats, std::vector<Beat>& image) {
    std::vector<unsigned char> bytes;
    if (!read_bytes(path, bytes)) {
        return false;
    }
    if (bytes.size() != beats * BYTES) {
        std::printf("ERROR %s holds %zu bytes, the design expects %zu\n", path.c_str(), bytes.size(), beats * BYTES);
        return false;
    }
    image.assign(beats == 0 ? 1 : beats, Beat());
    for (size_t t = 0; t < beats; ++t) {
        for (int k = 0; k < BYTES; ++k) {
            image[t].range(8 * k + 7, 8 * k) = bytes[t * BYTES + k];
        }
    }
    return true;
}

// Vectors onto a channel of S sub-channels: the nonzero x[i] in increasing order, x[i] on
// sub-channel i mod S, then one end item per sub-channel (any producer's split is as good: the
// consumer's merger takes items from whichever sub-channel has them).
template <int S, class Item>
void feed_items(hls::stream<Item> (&subs)[S], const int16_t* x, int batch, int n) {
    for (int v = 0; v < batch; ++v) {
        const int16_t* row = x + static_cast<size_t>(v) * n;
        for (int i = 0; i < n; ++i) {
            if (row[i] != 0) {
                subs[i % S].write(fpgagen::value_item<Item>(i, row[i]));
            }
        }
        for (int s = 0; s < S; ++s) {
            subs[s].write(fpgagen::end_item<Item>());
        }
    }
}

// Vectors as AXI4-Stream beats of K values, the last beat zero-padded and marked with TLAST.
template <int K, class Beat>
void feed_beats(hls::stream<Beat>& stream, const int16_t* x, int batch, int n) {
    const int beats = (n + K - 1) / K;
    for (int v = 0; v < batch; ++v) {
        for (int t = 0; t < beats; ++t) {
            Beat beat;
            for (int k = 0; k < K; ++k) {
                const int i = t * K + k;
                beat.data.range(16 * k + 15, 16 * k) = fpgagen::act_t(i < n ? x[static_cast<size_t>(v) * n + i] : 0);
            }
            beat.keep = -1;
            beat.strb = -1;
            beat.last = t == beats - 1 ? 1 : 0;
            stream.write(beat);
        }
    }
}

// A channel of S sub-channels back into dense vectors, checking its protocol on the way: per
// vector, on every sub-channel, nonzero values at increasing indices below n, then one end item.
template <int S, class Item>
bool collect_items(hls::stream<Item> (&subs)[S], int batch, int n, const char* layer, rows& out) {
    out.assign(static_cast<size_t>(batch) * n, 0);
    for (int v = 0; v < batch; ++v) {
        for (int s = 0; s < S; ++s) {
            int previous = -1;
            for (bool end = false; !end;) {
                if (subs[s].empty()) {
                    std::printf("ERROR layer=%s vector=%d sub-channel=%d: the vector ends without its end item\n", layer, v, s);
                    return false;
                }
                const Item entry = subs[s].read();
                end = entry.end;
                if (end) {
                    continue;
                }
                const int j = static_cast<int>(entry.index.to_uint());
                if (j >= n || j <= previous || entry.value == 0) {
                    std::printf("ERROR layer=%s vector=%d sub-channel=%d: item index=%d value=%d breaks the channel protocol\n",
                                layer, v, s, j, entry.value.to_int());
                    return false;
                }
                previous = j;
                out[static_cast<size_t>(v) * n + j] = static_cast<int16_t>(entry.value.to_int());
            }
        }
    }
    for (int s = 0; s < S; ++s) {
        if (!subs[s].empty()) {
            std::printf("ERROR layer=%s sub-channel=%d: items left after %d vectors\n", layer, s, batch);
            return false;
        }
    }
    return true;
}

// Dense output beats (P values each, TLAST on a vector's last beat) back into vectors.
template <int P, class Beat>
bool collect_dense(hls::stream<Beat>& stream, int batch, int n, const char* layer, rows& out) {
    const int beats = (n + P - 1) / P;
    out.assign(static_cast<size_t>(batch) * n, 0);
    for (int v = 0; v < batch; ++v) {
        for (int t = 0; t < beats; ++t) {
            if (stream.empty()) {
                std::printf("ERROR layer=%s vector=%d: output beat %d of %d is missing\n", layer, v, t, beats);
                return false;
            }
            const Beat beat = stream.read();
            if ((beat.last.to_uint() == 1) != (t == beats - 1)) {
                std::printf("ERROR layer=%s vector=%d beat=%d: TLAST is %u\n", layer, v, t, beat.last.to_uint());
                return false;
            }
            for (int p = 0; p < P && t * P + p < n; ++p) {
                const fpgagen::act_t value = beat.data.range(16 * p + 15, 16 * p);
                out[static_cast<size_t>(v) * n + t * P + p] = static_cast<int16_t>(value.to_int());
            }
        }
    }
    if (!stream.empty()) {
        std::printf("ERROR layer=%s: output beats left after %d vectors\n", layer, batch);
        return false;
    }
    return true;
}

// The first difference, as the one line `fpgagen csim` parses.
inline bool compare(const char* layer, const int16_t* expected, const rows& got, int batch, int n) {
    for (int v = 0; v < batch; ++v) {
        for (int j = 0; j < n; ++j) {
            const size_t at = static_cast<size_t>(v) * n + j;
            if (expected[at] != got[at]) {
                std::printf("MISMATCH layer=%s vector=%d index=%d expected=%d got=%d\n", layer, v, j, expected[at], got[at]);
                return false;
            }
        }
    }
    return true;
}

// A stage must take every item of its input channel: what it leaves would be read as the next
// vector's.
template <int S, class Item>
bool consumed(hls::stream<Item> (&subs)[S], const char* layer) {
    for (int s = 0; s < S; ++s) {
        if (!subs[s].empty()) {
            std::printf("ERROR layer=%s input sub-channel=%d: %zu items left unread\n", layer, s, subs[s].size());
            return false;
        }
    }
    return true;
}

// One stage on its own: the golden input of its first layer on a channel of S sub-channels in, its
// output (a channel of K sub-channels) against the golden output of its last layer. `run(in, out)`
// runs the stage.
template <int S, int K, class InItem, class OutItem, class Run>
bool check_stage_items(const golden& g, int first, int last, const char* layer, Run run) {
    hls::stream<InItem> in[S];
    hls::stream<OutItem> out[K];
    feed_items(in, g.input(first), g.batch, g.input_size(first));
    run(in, out);
    rows got;
    return consumed(in, layer) && collect_items(out, g.batch, g.n_out[last], layer, got) &&
           compare(layer, g.y[last].data(), got, g.batch, g.n_out[last]);
}

// The same for the stage that drains dense beats of P values: `run(in, out)`.
template <int S, int P, class InItem, class Beat, class Run>
bool check_stage_dense(const golden& g, int first, int last, const char* layer, Run run) {
    hls::stream<InItem> in[S];
    hls::stream<Beat> out;
    feed_items(in, g.input(first), g.batch, g.input_size(first));
    run(in, out);
    rows got;
    return consumed(in, layer) && collect_dense<P>(out, g.batch, g.n_out[last], layer, got) &&
           compare(layer, g.y[last].data(), got, g.batch, g.n_out[last]);
}

// A loaded stage on its own: its link of the load chain carries the load image from beat `first`
// on (the loaded stages before it keep their rows).
template <class Beat>
void feed_load(hls::stream<Beat>& load, const std::vector<Beat>& image, size_t first) {
    for (size_t t = first; t < image.size(); ++t) {
        load.write(image[t]);
    }
}

// The last stage of the load chain takes every beat of its link: its rows.
template <class Beat>
bool check_load(hls::stream<Beat>& load, const char* layer) {
    if (!load.empty()) {
        std::printf("ERROR layer=%s: %zu beats of the load chain left unread\n", layer, load.size());
        return false;
    }
    return true;
}

// Any other takes every beat of its link and passes on those after its rows, from beat `rest` of
// the image on, in order.
template <class Beat>
bool check_load(hls::stream<Beat>& load, hls::stream<Beat>& passed, const std::vector<Beat>& image, size_t rest,
                const char* layer) {
    for (size_t t = rest; t < image.size(); ++t) {
        if (passed.empty() || passed.read() != image[t]) {
            std::printf("ERROR layer=%s: beat %zu of the load image is not passed on down the load chain\n", layer, t);
            return false;
        }
    }
    if (!passed.empty()) {
        std::printf("ERROR layer=%s: %zu beats passed on down the load chain past the image's end\n", layer, passed.size());
        return false;
    }
    return check_load(load, layer);
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace fpgagen_tb

#endif
