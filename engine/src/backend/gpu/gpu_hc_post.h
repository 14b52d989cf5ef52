// One value of the hyper-connection post (hc_post), shared by its own kernel (gpu_ops.cu) and the
// mix kernel that computes the post of the streams it then reads (gpu_hc.cu, hc_post_pre_norm),
// so the two give the same bits: X_out_j[i] = post_j y[i] + sum_r M[r][j] X_r[i], in double
// in r order, rounded once (cpu_hc.cpp's order).
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"

namespace ds4 {
namespace gpu {

// The post's inputs: y [n_tokens][E] (the sublayer's output), X [n_tokens][n_hc][E] (the streams
// before it), split [n_tokens][2 n_hc + n_hc^2] (hc_pre's, post at n_hc, M at 2 n_hc).
struct HcPostIn {
    const float* y;
    const float* X;
    const double* split;
};

// Value (stream j, element i) of token t.
__device__ inline float hc_post_value(const HcPostIn& in, int64_t n_hc, int64_t E, int64_t t, int64_t j, int64_t i) {
    const int64_t SS = 2 * n_hc + n_hc * n_hc;
    const double* post = in.split + t * SS + n_hc;
    const double* M = in.split + t * SS + 2 * n_hc;
    const float* Xt = in.X + t * n_hc * E;
    double acc = post[j] * (double)in.y[t * E + i];
    for (int64_t r = 0; r < n_hc; ++r) acc += M[r * n_hc + j] * (double)Xt[r * E + i];
    return (float)acc;
}

}  // namespace gpu
}  // namespace ds4
