// fpgagen's stand-in for the Vitis HLS arbitrary-precision integers (ap_int.h), for C simulation
// with a plain g++. It covers what fpgagen's generated code uses and no more: ap_int<W> and
// ap_uint<W> wrap on assignment like the real types; up to 64 bits they convert implicitly to
// native integers, so arithmetic happens in 64-bit native integers and wraps when stored. Wider
// values (AXI data words) are containers: range(hi, lo) reads and writes fields of up to 64 bits.
// Build against the real headers instead by setting XILINX_HLS (see the Makefile).
#ifndef FPGAGEN_SHIM_AP_INT_H
#define FPGAGEN_SHIM_AP_INT_H

#include <type_traits>

namespace fpgagen_shim {

typedef unsigned long long u64;
typedef long long s64;

inline u64 low_mask(int bits) { return bits >= 64 ? ~0ULL : ((1ULL << bits) - 1); }

// A signed source value that is negative fills the bits above it with ones when widened.
template <class T>
inline bool is_negative(T value) {
    return std::is_signed<T>::value && static_cast<s64>(value) < 0;
}

template <class Owner>
class range_ref;

template <int W, bool S, bool Small = (W <= 64)>
class ap_base;

// Up to 64 bits: one word, kept reduced to W bits.
template <int W, bool S>
class ap_base<W, S, true> {
    static_assert(W >= 1, "ap_int width must be positive");

  public:
    static const int width = W;
    typedef typename std::conditional<S, s64, u64>::type native_type;

    ap_base() : bits_(0) {}
    template <class T, class = typename std::enable_if<std::is_integral<T>::value>::type>
    ap_base(T value) : bits_(static_cast<u64>(value) & low_mask(W)) {}
    template <int W2, bool S2, bool B2>
    ap_base(const ap_base<W2, S2, B2>& other) : bits_(other.low_word() & low_mask(W)) {}
    template <class Owner>
    ap_base(const range_ref<Owner>& field) : bits_(field.to_uint64() & low_mask(W)) {}

    operator native_type() const { return value(); }

    int to_int() const { return static_cast<int>(value()); }
    unsigned to_uint() const { return static_cast<unsigned>(value()); }
    s64 to_int64() const { return static_cast<s64>(value()); }
    u64 to_uint64() const { return static_cast<u64>(value()); }

    template <class T>
    ap_base& operator+=(const T& other) { return *this = ap_base(value() + other); }
    template <class T>
    ap_base& operator-=(const T& other) { return *this = ap_base(value() - other); }
    ap_base& operator++() { return *this = ap_base(value() + 1); }

    range_ref<ap_base> range(int hi, int lo) { return range_ref<ap_base>(this, hi, lo); }
    range_ref<ap_base> range(int hi, int lo) const { return range_ref<ap_base>(const_cast<ap_base*>(this), hi, lo); }

    u64 get_field(int hi, int lo) const { return (bits_ >> lo) & low_mask(hi - lo + 1); }
    void set_field(int hi, int lo, u64 field) {
        const u64 mask = low_mask(hi - lo + 1) << lo;
        bits_ = (bits_ & ~mask) | ((field << lo) & mask);
    }
    // The value widened to 64 bits (sign-extended when signed): what a wider type receives.
    u64 low_word() const { return static_cast<u64>(value()); }
    u64 word(int i) const { return i == 0 ? low_word() : (S && static_cast<s64>(value()) < 0 ? ~0ULL : 0ULL); }

  private:
    native_type value() const {
        if (S && W < 64 && ((bits_ >> (W - 1)) & 1)) {
            return static_cast<native_type>(bits_ | ~low_mask(W));
        }
        return static_cast<native_type>(bits_);
    }
    u64 bits_;
};

// Wider than 64 bits: a little-endian array of words, for data buses only.
template <int W, bool S>
class ap_base<W, S, false> {
  public:
    static const int width = W;
    enum { words = (W + 63) / 64 };

    ap_base() { fill(0, 0ULL); }
    template <class T, class = typename std::enable_if<std::is_integral<T>::value>::type>
    ap_base(T value) {
        words_[0] = static_cast<u64>(value);
        fill(1, is_negative(value) ? ~0ULL : 0ULL);
    }
    template <int W2, bool S2, bool B2>
    ap_base(const ap_base<W2, S2, B2>& other) {
        for (int i = 0; i < words; ++i) {
            words_[i] = other.word(i);
        }
        trim();
    }

    range_ref<ap_base> range(int hi, int lo) { return range_ref<ap_base>(this, hi, lo); }
    range_ref<ap_base> range(int hi, int lo) const { return range_ref<ap_base>(const_cast<ap_base*>(this), hi, lo); }

    u64 get_field(int hi, int lo) const {
        const int bits = hi - lo + 1, at = lo / 64, shift = lo % 64;
        u64 field = words_[at] >> shift;
        if (shift && shift + bits > 64) {
            field |= words_[at + 1] << (64 - shift);
        }
        return field & low_mask(bits);
    }
    void set_field(int hi, int lo, u64 field) {
        const int bits = hi - lo + 1, at = lo / 64, shift = lo % 64;
        const u64 mask = low_mask(bits);
        field &= mask;
        words_[at] = (words_[at] & ~(mask << shift)) | (field << shift);
        if (shift && shift + bits > 64) {
            const u64 spill = low_mask(shift + bits - 64);
            words_[at + 1] = (words_[at + 1] & ~spill) | (field >> (64 - shift));
        }
    }
    u64 low_word() const { return words_[0]; }
    u64 word(int i) const { return i < words ? words_[i] : (S && ((words_[words - 1] >> ((W - 1) % 64)) & 1) ? ~0ULL : 0ULL); }

    // Equality of two words of the same width: the testbench compares the load chain's beats.
    bool operator==(const ap_base& other) const {
        for (int i = 0; i < words; ++i) {
            if (words_[i] != other.words_[i]) {
                return false;
            }
        }
        return true;
    }
    bool operator!=(const ap_base& other) const { return !(*this == other); }

  private:
    void fill(int from, u64 value) {
        for (int i = from; i < words; ++i) {
            words_[i] = value;
        }
        trim();
    }
    void trim() {
        if (W % 64) {
            words_[words - 1] &= low_mask(W % 64);
        }
    }
    u64 words_[words];
};

// The proxy x.range(hi, lo) returns: reads and writes a field of at most 64 bits.
template <class Owner>
class range_ref {
  public:
    range_ref(Owner* owner, int hi, int lo) : owner_(owner), hi_(hi), lo_(lo) {}
    range_ref(const range_ref&) = default;

    range_ref& operator=(u64 field) {
        owner_->set_field(hi_, lo_, field);
        return *this;
    }
    range_ref& operator=(const range_ref& other) { return *this = other.to_uint64(); }

    operator u64() const { return to_uint64(); }
    u64 to_uint64() const { return owner_->get_field(hi_, lo_); }
    s64 to_int64() const { return static_cast<s64>(to_uint64()); }
    unsigned to_uint() const { return static_cast<unsigned>(to_uint64()); }
    int to_int() const { return static_cast<int>(to_uint64()); }

  private:
    Owner* owner_;
    int hi_;
    int lo_;
};

}  // namespace fpgagen_shim

template <int W>
class ap_int : public fpgagen_shim::ap_base<W, true> {
  public:
    using fpgagen_shim::ap_base<W, true>::ap_base;
    ap_int() {}
};

template <int W>
class ap_uint : public fpgagen_shim::ap_base<W, false> {
  public:
    using fpgagen_shim::ap_base<W, false>::ap_base;
    ap_uint() {}
};

#endif
