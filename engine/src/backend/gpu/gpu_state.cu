// The sequence state's kernels (cpu_seq_state.cpp on the GPU): KV rows into the window
// ring as F16, and the compressors. Rings are indexed by position (slot p % rows), so a
// block may store all of its tokens' kappa/score rows first and then pool every window
// that completes inside it: a later position of the block never lands in a slot an
// earlier window still reads (rows = window + max_rewind >= window + max_block).
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"
#include "backend/gpu/gpu_step_pos.h"
#include "backend/gpu/gpu_tree.h"

#include <stdint.h>

namespace {
[[maybe_unused]] constexpr int kThreads = 128;  // the launchers' block size (unused in the device pass)
constexpr int kPoolThreads = 512;  // compress_rows: a thread per pooled column of a 512-wide row
constexpr int kMaxRowDim = 1024;  // pooled row length one block holds in shared memory
constexpr float kScoreInit = -1e30f;  // positions before 0 (D's initial state)
}  // namespace

// One thread per (token, element): ring[(p0 + i) % ring_rows] = F16(kv_i).
extern "C" __global__ void ds4_kv_store_kernel(const float* kv, int64_t n, int64_t D, ds4::gpu::StepPos p0,
                                               int64_t ring_rows, uint16_t* ring) {
    ds4_kernel_entry();
    const int64_t k = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (k >= n * D) return;
    const int64_t i = k / D, j = k % D;
    ring[((ds4::gpu::pos_of(p0) + i) % ring_rows) * D + j] = ds4::f32_to_f16(kv[k]);
}

// One thread per (token, value): kappa and score = gate + ape[(p0 + i) % ratio] into slot p % rows.
extern "C" __global__ void ds4_compress_store_kernel(const float* kappa, const float* gate, int64_t ld, int64_t n,
                                                     ds4::gpu::StepPos p0, int64_t W, int64_t ratio, const float* ape,
                                                     int64_t rows, float* ring_kv, float* ring_score) {
    ds4_kernel_entry();
    const int64_t k = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (k >= n * W) return;
    const int64_t i = k / W, j = k % W, p = ds4::gpu::pos_of(p0) + i;
    ring_kv[(p % rows) * W + j] = kappa[i * ld + j];
    ring_score[(p % rows) * W + j] = gate[i * ld + j] + ape[(p % ratio) * W + j];
}

// Block b: the b-th window that completes among the n tokens at p0.. (the block exits if fewer
// complete; the grid is sized for the most that can), ending at q: pooled (softmax over the
// scores, per column, in double as pool_window), RMS-normed, rotated at q + 1 - ratio, rounded
// (mode 1: FP8 of the non-rotated part; 2: Hadamard; 3: Hadamard + FP4) and stored as F16 row
// (q + 1) / ratio - 1 of `out` (the layer's rows).
extern "C" __global__ void ds4_compress_rows_kernel(ds4::gpu::StepPos p0, int64_t n, int64_t ratio, int64_t window,
                                                    int64_t rows, int64_t W, int64_t Dc, const float* ring_kv,
                                                    const float* ring_score, const float* norm, double eps,
                                                    ds4::RopeSpec rope, int64_t n_rot, int mode, uint16_t* out) {
    ds4_kernel_entry();
    __shared__ float row[kMaxRowDim];
    __shared__ double red[kPoolThreads];
    __shared__ double cs[ds4::gpu::kRopeShared];
    __shared__ double had[kMaxRowDim];
    const int t = (int)ds4_thread_x();
    const int64_t P = ds4::gpu::pos_of(p0), done = P / ratio, b = (int64_t)ds4_block_x();
    if (b >= (P + n) / ratio - done) return;  // the whole block: no b-th window in this call
    const int64_t q = (done + 1 + b) * ratio - 1, first = q - window + 1;
    // The ring slot of position first + c is stepped, not divided for: a 64-bit remainder per
    // load had cost most of the kernel (47 us a row at ratio 128 on the H200).
    const int64_t slot0 = (first % rows + rows) % rows;
    for (int64_t j = t; j < Dc; j += kPoolThreads) {
        // Candidate c is position first + c; ratio 4 pools the previous window (c < 4) at
        // column j and the current one at column Dc + j. Two passes: the max, then the sums.
        double mx = 0.0;
        int64_t slot = slot0;
#pragma unroll 8
        for (int64_t c = 0; c < window; ++c) {
            const int64_t p = first + c, col = (ratio == 4 && c >= 4) ? Dc + j : j;
            const double sc = p < 0 ? (double)kScoreInit : (double)ring_score[slot * W + col];
            mx = c == 0 ? sc : ds4::num::max_f64(mx, sc);
            slot = slot + 1 == rows ? 0 : slot + 1;
        }
        double den = 0.0, num = 0.0;
        slot = slot0;
#pragma unroll 8
        for (int64_t c = 0; c < window; ++c) {
            const int64_t p = first + c, col = (ratio == 4 && c >= 4) ? Dc + j : j;
            const double sc = p < 0 ? (double)kScoreInit : (double)ring_score[slot * W + col];
            const double v = p < 0 ? 0.0 : (double)ring_kv[slot * W + col];
            const double e = ::exp(sc - mx);
            den += e;
            num += e * v;
            slot = slot + 1 == rows ? 0 : slot + 1;
        }
        row[j] = (float)(num / den);
    }
    ds4_sync_block();
    // RMS norm with the weight (sum of squares in double, fixed tree; cpu_rms_norm_row's formula).
    double ss = 0.0;
    for (int64_t j = t; j < Dc; j += kPoolThreads) ss += (double)row[j] * (double)row[j];
    red[t] = ss;
    ds4::gpu::tree_reduce<1>(red, 0, 0, t, kPoolThreads);
    const double sc = 1.0 / ds4::num::sqrt_f64(red[0] / (double)Dc + eps);
    ds4_sync_block();
    for (int64_t j = t; j < Dc; j += kPoolThreads) row[j] = (float)((double)row[j] * sc * (double)norm[j]);
    ds4_sync_block();
    ds4::gpu::rope_cos_sin_block((double)(q + 1 - ratio), rope, cs);
    for (int64_t i = t; i < rope.n_rot / 2; i += kPoolThreads) ds4::gpu::rope_pair(row, Dc, rope.n_rot, cs, i, false);
    ds4_sync_block();
    // The roundings a thread per value (core/numerics.h fp8_e4m3_round_trip and
    // fp4_e2m1_round_trip: blocks of 64 and 32, the same bits).
    constexpr int kPer = kMaxRowDim / kPoolThreads;
    if (mode == 1) {
        ds4::gpu::block_round_trip_block<kPer>(row, Dc - n_rot, ds4::fp8_e4m3_rounding());
    } else if (mode >= 2) {
        for (int64_t j = t; j < Dc; j += kPoolThreads) had[j] = row[j];
        ds4::gpu::hadamard_block(had, Dc);
        for (int64_t j = t; j < Dc; j += kPoolThreads) row[j] = (float)had[j];
        if (mode == 3) ds4::gpu::block_round_trip_block<kPer>(row, Dc, ds4::fp4_e2m1_rounding());
    }
    ds4_sync_block();
    uint16_t* o = out + (done + b) * Dc;
    for (int64_t j = t; j < Dc; j += kPoolThreads) o[j] = ds4::f32_to_f16(row[j]);
}

// Widening of F16 rows to float (a state image) and back.
extern "C" __global__ void ds4_f16_to_f32_kernel(const uint16_t* src, float* dst, int64_t n) {
    ds4_kernel_entry();
    const int64_t k = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (k < n) dst[k] = ds4::f16_to_f32(src[k]);
}
extern "C" __global__ void ds4_f32_to_f16_kernel(const float* src, uint16_t* dst, int64_t n) {
    ds4_kernel_entry();
    const int64_t k = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (k < n) dst[k] = ds4::f32_to_f16(src[k]);
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {
unsigned blocks_for(int64_t n, const char* what) {
    const int64_t b = (n + kThreads - 1) / kThreads;
    if (b > 0x7fffffff) throw ArgumentError(DS4_GPU_WHO ": " + std::string(what) + " exceeds the launch grid");
    return (unsigned)b;
}
}  // namespace

void launch_kv_store(const float* kv, int64_t n, int64_t D, StepPos p0, int64_t ring_rows, uint16_t* ring, void* s) {
    if (n * D <= 0) return;
    ds4_launch(ds4_kv_store_kernel, dim3(blocks_for(n * D, "kv_store")), dim3(kThreads), s, kv, n, D, p0, ring_rows,
               ring);
    DS4_GPU_CHECK_LAUNCH("ds4_kv_store_kernel");
}

void launch_compress_store(const float* kappa, const float* gate, int64_t ld, int64_t n, StepPos p0, int64_t W,
                           int64_t ratio, const float* ape, int64_t rows, float* ring_kv, float* ring_score,
                           void* s) {
    if (n * W <= 0) return;
    ds4_launch(ds4_compress_store_kernel, dim3(blocks_for(n * W, "compress")), dim3(kThreads), s, kappa, gate, ld, n,
               p0, W, ratio, ape, rows, ring_kv, ring_score);
    DS4_GPU_CHECK_LAUNCH("ds4_compress_store_kernel");
}

void launch_compress_rows(StepPos p0, int64_t n, int64_t max_out, int64_t ratio, int64_t window, int64_t rows,
                          int64_t W, int64_t Dc, const float* ring_kv, const float* ring_score, const float* norm,
                          double eps, const RopeSpec& rope, int64_t n_rot, int mode, uint16_t* out, void* s) {
    if (max_out <= 0) return;
    if (Dc > kMaxRowDim || rope.n_rot > kMaxRot || (mode >= 2 && (Dc & (Dc - 1)) != 0)) {
        throw ArgumentError(DS4_GPU_WHO ": compress: row length " + std::to_string(Dc) + ", n_rot " +
                            std::to_string(rope.n_rot) + " (at most " + std::to_string(kMaxRowDim) + ", " +
                            std::to_string(kMaxRot) + "; indexer rows a power of two)");
    }
    ds4_launch(ds4_compress_rows_kernel, dim3((unsigned)max_out), dim3(kPoolThreads), s, p0, n, ratio, window, rows, W,
               Dc, ring_kv, ring_score, norm, eps, rope, n_rot, mode, out);
    DS4_GPU_CHECK_LAUNCH("ds4_compress_rows_kernel");
}

void launch_f16_to_f32(const uint16_t* src, float* dst, int64_t n, void* s) {
    if (n <= 0) return;
    ds4_launch(ds4_f16_to_f32_kernel, dim3(blocks_for(n, "f16 widening")), dim3(kThreads), s, src, dst, n);
    DS4_GPU_CHECK_LAUNCH("ds4_f16_to_f32_kernel");
}

void launch_f32_to_f16(const float* src, uint16_t* dst, int64_t n, void* s) {
    if (n <= 0) return;
    ds4_launch(ds4_f32_to_f16_kernel, dim3(blocks_for(n, "f16 rounding")), dim3(kThreads), s, src, dst, n);
    DS4_GPU_CHECK_LAUNCH("ds4_f32_to_f16_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
