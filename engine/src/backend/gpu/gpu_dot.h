// The one reduction every matrix-vector product of the GPU backend uses (matmul, the
// experts of moe): a thread block of kDotThreads threads computes W_row . x_c for NC
// columns at once.
//
// Order (what makes verify == decode bitwise): thread t reads the row in chunks of 8
// consecutive elements, chunks t, t + T, t + 2T, ... (T = kDotThreads); per chunk it forms
// p = the 8 products w_j * x_j summed in element order with fmaf from 0, then
// acc = fmaf(d, p, acc) (d: the chunk's factor, gpu_dequant.h). The T partial sums are
// then added in a fixed shared-memory tree (t += t + s for s = T/2, ..., 1). Nothing
// depends on NC: NC columns run NC copies of the one-column arithmetic side by side (the
// weights are loaded once), and with contraction off (--fmad=false / -ffp-contract=off)
// no instantiation can fuse differently. So each column has exactly the bits of NC = 1.
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_dequant.h"

namespace ds4 {
namespace gpu {

constexpr int kDotThreads = 128;  // a multiple of every wave size (32, 64): see gpu_compat.h

// out[c] (valid in thread 0 only) = row . x[c][0..n) for c < NC. Every thread of the block
// must call it; `part` is shared memory of NC * kDotThreads floats. Ends with a barrier, so
// the caller may call it again at once.
template <int NC, uint32_t TYPE>
__device__ inline void block_dot(const uint8_t* row, int64_t n, const float* const* x, const uint64_t* grid,
                                 float* part, float* out) {
    const int t = (int)ds4_thread_x();
    float acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = 0.0f;
    const int64_t n_chunks = (n + kChunk - 1) / kChunk;
    for (int64_t k = t; k < n_chunks; k += kDotThreads) {
        float w[kChunk];
        const float d = load_chunk<TYPE>(row, k, n, grid, w);
        const int64_t e0 = k * kChunk;
        const int len = n - e0 < kChunk ? (int)(n - e0) : kChunk;
        for (int c = 0; c < NC; ++c) {
            float p = 0.0f;
            for (int j = 0; j < len; ++j) p = ds4_fmaf(w[j], x[c][e0 + j], p);
            acc[c] = ds4_fmaf(d, p, acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) part[c * kDotThreads + t] = acc[c];
    ds4_sync_block();
    for (int s = kDotThreads / 2; s > 0; s >>= 1) {
        if (t < s) {
            for (int c = 0; c < NC; ++c) part[c * kDotThreads + t] += part[c * kDotThreads + t + s];
        }
        ds4_sync_block();
    }
    if (t == 0) {
        for (int c = 0; c < NC; ++c) out[c] = part[c * kDotThreads];
    }
    ds4_sync_block();
}

// Every type the matrix kernels decode, for the launchers' switches.
#define DS4_GPU_FOR_EACH_TYPE(X) \
    X(0) X(1) X(2) X(8) X(10) X(12) X(16) X(30) X(39) X(100) X(101) X(102) X(103) X(104) X(107)

}  // namespace gpu
}  // namespace ds4
