// The CPU backend's scalar numerics are the neutral ones in core/numerics.h (the
// GPU kernels use the same DS4_HD code); this header adds the host-only helper.
#pragma once
#include <cstdint>
#include <vector>

#include "core/numerics.h"

namespace ds4 {

// The n_rot / 2 RoPE angles at pos as a vector (tests and bindings).
inline std::vector<double> rope_angles(double pos, const RopeSpec& spec) {
    std::vector<double> theta((size_t)(spec.n_rot / 2));
    rope_angles(pos, spec, theta.data());
    return theta;
}

}  // namespace ds4
