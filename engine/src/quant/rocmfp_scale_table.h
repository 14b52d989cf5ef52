// ROCmFP block scales s(e) for all 256 scale bytes as a compile-time table, shared
// by the SIMD decoders (no branch per block on the hot path, and no run-time
// initialiser that could execute ISA-specific code on a CPU without it).
#pragma once
#include <cstdint>

namespace ds4 {
namespace detail {

// Equal to rocmfp::scale, which the tests pin.
struct RocmfpScaleTable {
    float v[256] = {};
    constexpr RocmfpScaleTable() {
        for (int e = 0; e <= 0x7E; ++e) {
            const int ex = e >> 3, m = e & 7;
            float p = 1.0f / 1024.0f;  // 2^-10
            for (int k = 1; k < ex; ++k) p *= 2.0f;
            v[e] = ex == 0 ? (float)m * p : (float)(8 + m) * p;  // (8+m) * 2^(ex-11) = (8+m) * 2^-10 * 2^(ex-1)
        }
    }
};
inline constexpr RocmfpScaleTable kRocmfpScale{};
static_assert(kRocmfpScale.v[0x01] == 1.0f / 1024.0f && kRocmfpScale.v[0x08] == 8.0f / 1024.0f &&
                  kRocmfpScale.v[0x40] == 1.0f && kRocmfpScale.v[0x7E] == 224.0f && kRocmfpScale.v[0x7F] == 0.0f,
              "ROCmFP scale table");
inline float rocmfp_scale(uint8_t e) { return kRocmfpScale.v[e]; }

}  // namespace detail
}  // namespace ds4
