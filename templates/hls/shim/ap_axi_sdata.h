// fpgagen's stand-in for the Vitis HLS AXI4-Stream side-channel types (ap_axi_sdata.h): hls::axis
// with the data, keep, strb and last fields (no user, id or dest: fpgagen's streams use none).
#ifndef FPGAGEN_SHIM_AP_AXI_SDATA_H
#define FPGAGEN_SHIM_AP_AXI_SDATA_H

#include <cstddef>

#include <ap_int.h>

namespace hls {

template <class T, std::size_t WUser = 0, std::size_t WId = 0, std::size_t WDest = 0>
struct axis {
    static_assert(WUser == 0 && WId == 0 && WDest == 0, "the shim has no user, id or dest signals");
    T data;
    ap_uint<(T::width + 7) / 8> keep;
    ap_uint<(T::width + 7) / 8> strb;
    ap_uint<1> last;
};

}  // namespace hls

#endif
