// fpgagen's stand-in for the Vitis HLS stream (hls_stream.h), for C simulation with a plain g++.
// A stream is an unbounded queue, as in the vendor's C simulation model: processes of a dataflow
// region run one after another in C, so every FIFO must be able to hold a whole batch. Reading an
// empty stream is a design error that would hang the hardware; here it stops the simulation.
#ifndef FPGAGEN_SHIM_HLS_STREAM_H
#define FPGAGEN_SHIM_HLS_STREAM_H

#include <cstdio>
#include <cstdlib>
#include <deque>

namespace hls {

template <class T>
class stream {
  public:
    stream() : name_("hls::stream") {}
    explicit stream(const char* name) : name_(name) {}
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;

    void write(const T& value) { queue_.push_back(value); }
    T read() {
        if (queue_.empty()) {
            std::fprintf(stderr, "ERROR %s read while empty: the design would hang here\n", name_);
            std::exit(2);
        }
        T value = queue_.front();
        queue_.pop_front();
        return value;
    }
    void read(T& value) { value = read(); }
    bool read_nb(T& value) {
        if (queue_.empty()) {
            return false;
        }
        value = read();
        return true;
    }
    bool write_nb(const T& value) {
        write(value);
        return true;
    }
    bool empty() const { return queue_.empty(); }
    bool full() const { return false; }
    std::size_t size() const { return queue_.size(); }
    void operator<<(const T& value) { write(value); }
    void operator>>(T& value) { read(value); }

  private:
    const char* name_;
    std::deque<T> queue_;
};

}  // namespace hls

#endif
