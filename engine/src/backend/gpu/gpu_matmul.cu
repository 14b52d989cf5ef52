// Matmul (GEMV-style) kernels for F32, F16 and Q8_0 weight rows, one source for CUDA
// and HIP. One thread block per output row and group of up to kCols columns.
//
// Reduction order (what makes verify == decode bitwise): thread t of the block reads
// the row in chunks of 8 consecutive elements, chunks t, t + T, t + 2T, ... (T =
// kThreads); per chunk it forms p = the 8 products summed in element order with fmaf
// from 0, then acc = fmaf(d, p, acc) with d the Q8_0 block scale (1 for F32/F16). The
// T partial sums are then added in a fixed shared-memory tree (t += t + s for s = T/2,
// ..., 1). None of this depends on how many columns are computed together: a group of
// NC columns runs NC copies of the one-column arithmetic side by side (the weights are
// loaded once), and with contraction off (--fmad=false / -ffp-contract=off) the
// compiler cannot fuse one instantiation differently from another. So each column is
// bitwise what ncols = 1 gives; backend_compare checks it on every run.
// Accumulation is float (the CPU backend accumulates exact products in double): the
// normalised error against the CPU is a few float ulps times the chain length
// (n_in / (8 T) chunks plus log2 T tree levels).
#include "backend/gpu/gpu_compat.h"
#include "core/numerics.h"

#include <stdint.h>

namespace {

constexpr int kThreads = 128;  // a multiple of every wave size (32, 64): see gpu_compat.h
constexpr int kCols = 4;       // columns per block (registers per thread)
constexpr int kChunk = 8;      // elements a thread reads at a time
constexpr int kQ8Block = 32, kQ8Bytes = 34;  // Q8_0: { f16 d; int8 qs[32] }

enum Fmt { kF32 = 0, kF16 = 1, kQ8_0 = 2 };

// The weights of chunk k (elements 8k .. 8k+7; zero past n) and its scale.
template <int FMT>
__device__ inline float load_chunk(const uint8_t* row, int64_t k, int64_t n, float* w) {
    const int64_t e0 = k * kChunk;
    if constexpr (FMT == kQ8_0) {  // n is a whole number of blocks, so a chunk never runs past it
        const uint8_t* blk = row + (e0 / kQ8Block) * kQ8Bytes;
        const int8_t* qs = (const int8_t*)(blk + 2) + (e0 % kQ8Block);
        for (int j = 0; j < kChunk; ++j) w[j] = (float)qs[j];
        return ds4::f16_to_f32((uint16_t)(blk[0] | (blk[1] << 8)));
    } else {
        for (int j = 0; j < kChunk; ++j) {
            const int64_t e = e0 + j;
            if (e >= n) {
                w[j] = 0.0f;
            } else if constexpr (FMT == kF16) {
                w[j] = ds4::f16_to_f32(((const uint16_t*)row)[e]);
            } else {
                w[j] = ((const float*)row)[e];
            }
        }
        return 1.0f;
    }
}

}  // namespace

// Block (r, g): output row r for columns c0 + g * NC .. + NC.
template <int NC, int FMT>
__global__ void ds4_matmul_kernel(const uint8_t* W, uint64_t row_bytes, int64_t n, const float* X, int64_t ldx,
                                  int c0, float* Y, int64_t ldy) {
    __shared__ float part[NC][kThreads];
    const int t = (int)ds4_thread_x();
    const int64_t r = ds4_block_x();
    const int c_first = c0 + (int)ds4_block_y() * NC;
    const uint8_t* row = W + (uint64_t)r * row_bytes;
    const float* x[NC];
    float acc[NC];
    for (int c = 0; c < NC; ++c) {
        x[c] = X + (int64_t)(c_first + c) * ldx;
        acc[c] = 0.0f;
    }
    const int64_t n_chunks = (n + kChunk - 1) / kChunk;
    for (int64_t k = t; k < n_chunks; k += kThreads) {
        float w[kChunk];
        const float d = load_chunk<FMT>(row, k, n, w);
        const int64_t e0 = k * kChunk;
        const int len = n - e0 < kChunk ? (int)(n - e0) : kChunk;
        for (int c = 0; c < NC; ++c) {
            float p = 0.0f;
            for (int j = 0; j < len; ++j) p = ds4_fmaf(w[j], x[c][e0 + j], p);
            acc[c] = ds4_fmaf(d, p, acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) part[c][t] = acc[c];
    ds4_sync_block();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if (t < s) {
            for (int c = 0; c < NC; ++c) part[c][t] += part[c][t + s];
        }
        ds4_sync_block();
    }
    if (t == 0) {
        for (int c = 0; c < NC; ++c) Y[(int64_t)(c_first + c) * ldy + r] = part[c][0];
    }
}

// Every instantiation the launcher uses, spelled out so a device-only compile (which never
// sees the host launcher) still emits each kernel.
#define DS4_MATMUL_INSTANCES(FMT)                                                                              \
    template __global__ void ds4_matmul_kernel<1, FMT>(const uint8_t*, uint64_t, int64_t, const float*, int64_t, \
                                                       int, float*, int64_t);                                    \
    template __global__ void ds4_matmul_kernel<2, FMT>(const uint8_t*, uint64_t, int64_t, const float*, int64_t, \
                                                       int, float*, int64_t);                                    \
    template __global__ void ds4_matmul_kernel<3, FMT>(const uint8_t*, uint64_t, int64_t, const float*, int64_t, \
                                                       int, float*, int64_t);                                    \
    template __global__ void ds4_matmul_kernel<4, FMT>(const uint8_t*, uint64_t, int64_t, const float*, int64_t, \
                                                       int, float*, int64_t);
DS4_MATMUL_INSTANCES(kF32)
DS4_MATMUL_INSTANCES(kF16)
DS4_MATMUL_INSTANCES(kQ8_0)
static_assert(kCols == 4, "DS4_MATMUL_INSTANCES lists NC = 1 .. kCols");

#if DS4_GPU_HOST_CODE
#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {

template <int FMT>
void launch_group(int nc, unsigned groups, const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows,
                  const float* X, int64_t ldx, int c0, float* Y, int64_t ldy, void* s) {
    const dim3 grid((unsigned)n_rows, groups);
    void (*k)(const uint8_t*, uint64_t, int64_t, const float*, int64_t, int, float*, int64_t) =
        nc == 1 ? ds4_matmul_kernel<1, FMT> : nc == 2 ? ds4_matmul_kernel<2, FMT>
        : nc == 3 ? ds4_matmul_kernel<3, FMT> : ds4_matmul_kernel<4, FMT>;
    ds4_launch(k, grid, dim3(kThreads), s, W, row_bytes, n, X, ldx, c0, Y, ldy);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_kernel");
}

template <int FMT>
void launch_fmt(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows, const float* X, int64_t ldx,
                int ncols, float* Y, int64_t ldy, void* s) {
    const int full = ncols / kCols, rest = ncols % kCols;
    if (full > 0) launch_group<FMT>(kCols, (unsigned)full, W, row_bytes, n, n_rows, X, ldx, 0, Y, ldy, s);
    if (rest > 0) launch_group<FMT>(rest, 1, W, row_bytes, n, n_rows, X, ldx, full * kCols, Y, ldy, s);
}

}  // namespace

void launch_matmul(RowFormat fmt, const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, const float* X,
                   int64_t ldx, int ncols, float* Y, int64_t ldy, void* stream) {
    if (n_rows <= 0 || ncols <= 0) return;
    if (n_rows > 0x7fffffff || ncols / kCols > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": matmul of " + std::to_string(n_rows) + " rows x " +
                            std::to_string(ncols) + " columns exceeds the launch grid");
    }
    void* s = stream;
    switch (fmt) {
        case RowFormat::F32: launch_fmt<kF32>(W, row_bytes, n_in, n_rows, X, ldx, ncols, Y, ldy, s); break;
        case RowFormat::F16: launch_fmt<kF16>(W, row_bytes, n_in, n_rows, X, ldx, ncols, Y, ldy, s); break;
        case RowFormat::Q8_0: launch_fmt<kQ8_0>(W, row_bytes, n_in, n_rows, X, ldx, ncols, Y, ldy, s); break;
    }
}

}  // namespace gpu
}  // namespace ds4
#endif
