// RoPE of one layer kind: plain (ext_factor 0) or YaRN (ext_factor 1,
// freq_scale = 1/factor); the YaRN magnitude factor cancels (net scale 1).
#pragma once
#include <cstdint>

namespace ds4 {

struct RopeSpec {
    int64_t n_rot = 0;
    double freq_base = 10000.0;
    double freq_scale = 1.0;
    double ext_factor = 0.0;
    int64_t n_ctx_orig = 0;
    double beta_fast = 32.0;
    double beta_slow = 1.0;
};

}  // namespace ds4
