// The indexer's row selection on the GPU (cpu_attention.cpp CpuBackend::indexer_select): token i
// sees n_c = (p0 + i + 1) / 4 indexer rows; when n_c > top_k it keeps the top_k rows ranked by
// score (descending, ties to the lower row) and writes them in ascending row order.
//
// Scores: a block per 16 rows with q and the rows in shared memory; a thread per (row, head)
// computes the head's dot (gpu_math.h attn_dot, the CPU's order), and one thread per row adds
// w_h * max(dot_h, 0) over the heads in order from 0, in double: the CPU's sum, bit for bit.
// (A thread per row looping over 64 heads left most of the GPU idle: 32 blocks at 8192 rows.)
//
// Selection: a radix select over the scores as ordered 64-bit keys, 8 bits a pass from the top
// (stopping early once a digit's rows are exactly the ones still needed), finds the top_k-th key
// T and how many rows equal to T are kept (the lowest ones); then each
// thread takes a contiguous run of rows, and two block scans give every kept row its place.
// O(n_c) a pass. The rank-by-counting kernel it replaces compared every row with every other
// (n_c^2 / 256 steps a thread): 58 ms a decoded token at 32K context on the issue's file.
// Any correct selection of that set is the same set, so the result does not depend on the
// method (tests/gpu compares with the CPU).
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"  // before gpu_dequant.h: core/numerics.h needs its device libm
#include "backend/gpu/gpu_dequant.h"
#include "backend/gpu/gpu_step_pos.h"

#include <stdint.h>

namespace {
constexpr int kThreads = 256;  // a multiple of the wave size; radix digits are 8 bits (256 bins)
constexpr int kDigitBits = 8, kBins = 1 << kDigitBits;
static_assert(kBins == kThreads, "a thread per histogram bin");

// Rows of n_c a token sees at position p.
__device__ inline int64_t indexer_rows(int64_t p) { return (p + 1) / 4; }

// Shared memory of a scores block, in floats: token i's q (a head's d values at a stride of d + 1,
// so the threads of a warp, one head each, read distinct banks) and kScoreRows rows as floats.
constexpr int kScoreRows = 16;
constexpr int kScoreSmem = 11 * 1024;  // 44 KB (+ 2 KB of dots): under CUDA's 48 KB and gfx1151's 64 KB

// Block (x, token i): rows [x * kScoreRows, +kScoreRows) of the n_c token i sees, q and the rows
// staged in shared memory (reading q from global memory, a warp's 32 heads touched 32 cache lines
// a load: 288 us a layer at 8192 rows); then a thread per (row, head), kThreads / n_head rows at a
// time, and a thread per row adding the heads in order.
extern "C" __global__ void ds4_indexer_scores_kernel(const uint16_t* idx_rows, ds4::gpu::StepPos p0, const float* q,
                                                     const float* w, int64_t n, int64_t n_head, int64_t d,
                                                     int64_t top_k, double* scores, int64_t ld) {
    ds4_kernel_entry();
    __shared__ float smem[kScoreSmem];
    __shared__ double dots[kThreads];
    const int64_t i = ds4_block_y();
    const int t = (int)ds4_thread_x();
    const int64_t n_c = indexer_rows(ds4::gpu::pos_of(p0) + i), c0 = (int64_t)ds4_block_x() * kScoreRows;
    if (i >= n || n_c <= top_k || c0 >= n_c) return;  // the whole block returns: no barrier is left waiting
    float* qs = smem;
    float* rs = smem + n_head * (d + 1);
    const float* qi = q + i * n_head * d;
    for (int64_t e = t; e < n_head * d; e += kThreads) qs[(e / d) * (d + 1) + e % d] = qi[e];
    const int64_t rows = n_c - c0 < kScoreRows ? n_c - c0 : kScoreRows;
    for (int64_t e = t; e < rows * d; e += kThreads) rs[e] = ds4::f16_to_f32(idx_rows[c0 * d + e]);
    ds4_sync_block();
    const int64_t per_round = kThreads / n_head, g = t / n_head, h = t % n_head;
    for (int64_t r0 = 0; r0 < rows; r0 += per_round) {
        const int64_t r = r0 + g;
        const bool live = g < per_round && r < rows;
        if (live) {
            const float* row = rs + r * d;
            dots[t] = ds4::gpu::attn_dot(qs + h * (d + 1), [row](int64_t j) { return (double)row[j]; }, d);
        }
        ds4_sync_block();
        if (live && h == 0) {
            double acc = 0.0;
            for (int64_t k = 0; k < n_head; ++k) {
                acc += (double)w[i * n_head + k] * ds4::num::max_f64(dots[t + k], 0.0);
            }
            scores[i * ld + c0 + r] = acc;
        }
        ds4_sync_block();
    }
}

// The score as a key whose unsigned order is the doubles' order (-0 taken as +0, so equal
// scores have equal keys).
__device__ inline uint64_t score_key(double v) {
    const uint64_t u = v == 0.0 ? 0 : ds4::num::bits_f64(v);
    return (u >> 63) ? ~u : (u | (1ull << 63));
}

// Exclusive prefix sum of each thread's v over the block (thread order); `sum` gets the total.
// buf: kThreads ints of shared memory. Every thread calls it.
__device__ inline int block_exclusive_scan(int v, int* buf, int* sum) {
    const int t = (int)ds4_thread_x();
    buf[t] = v;
    ds4_sync_block();
    for (int s = 1; s < kThreads; s *= 2) {
        const int add = t >= s ? buf[t - s] : 0;
        ds4_sync_block();
        buf[t] += add;
        ds4_sync_block();
    }
    const int inclusive = buf[t];
    *sum = buf[kThreads - 1];
    ds4_sync_block();
    return inclusive - v;
}

// Block i: selected[i * top_k ..] = the top_k rows (score descending, ties: lower row) in
// ascending order, or every visible row when there are at most top_k.
extern "C" __global__ void ds4_indexer_topk_kernel(ds4::gpu::StepPos p0, int64_t top_k, const double* scores,
                                                   int64_t ld, int32_t* selected) {
    ds4_kernel_entry();
    __shared__ int hist[kBins];
    __shared__ int scan[kThreads];
    __shared__ uint64_t found_prefix;
    __shared__ int found_need, found_whole;
    const int64_t i = ds4_block_x();
    const int64_t n_c = indexer_rows(ds4::gpu::pos_of(p0) + i);
    const int t = (int)ds4_thread_x();
    int32_t* sel = selected + i * top_k;
    if (n_c <= top_k) {
        for (int64_t c = t; c < n_c; c += kThreads) sel[c] = (int32_t)c;
        return;
    }
    const double* s = scores + i * ld;
    // Radix select from the top digit: prefix holds the digits of T found so far, need the rows
    // still to take among those whose key starts with prefix. When a digit's rows are exactly the
    // rows still needed, all of them are kept and the lower digits need not be looked at.
    uint64_t prefix = 0;
    int need = (int)top_k;
    for (int shift = 64 - kDigitBits; shift >= 0; shift -= kDigitBits) {
        hist[t] = 0;
        ds4_sync_block();
        const uint64_t high_mask = shift + kDigitBits >= 64 ? 0 : ~0ull << (shift + kDigitBits);
        for (int64_t c = t; c < n_c; c += kThreads) {
            const uint64_t key = score_key(s[c]);
            if ((key & high_mask) == prefix) ds4_atomic_add_shared(&hist[(key >> shift) & (kBins - 1)], 1);
        }
        ds4_sync_block();
        // The digit where the count from the top reaches need: thread t holds digit 255 - t, and
        // a scan gives each the count of the digits above its own (one thread finds it).
        const int count = hist[kBins - 1 - t];
        int total = 0;
        const int above = block_exclusive_scan(count, scan, &total);
        if (above < need && above + count >= need) {
            found_prefix = prefix | ((uint64_t)(kBins - 1 - t) << shift);
            found_need = need - above;
            found_whole = above + count == need ? 1 : 0;
        }
        ds4_sync_block();
        prefix = found_prefix;
        need = found_need;
        const bool whole = found_whole != 0;
        ds4_sync_block();  // found_* are rewritten by the next pass
        if (whole) break;  // the same for every thread of the block
    }
    // prefix is T: every row above T is kept, and the `need` lowest rows equal to T. (After an
    // early stop T's lower digits are zero, so all the last digit's rows are >= T: kept.)
    const int64_t per = (n_c + kThreads - 1) / kThreads, c0 = t * per, c1 = c0 + per < n_c ? c0 + per : n_c;
    int above = 0, equal = 0;
    for (int64_t c = c0; c < c1; ++c) {
        const uint64_t key = score_key(s[c]);
        above += key > prefix ? 1 : 0;
        equal += key == prefix ? 1 : 0;
    }
    int total = 0;
    const int equal_before = block_exclusive_scan(equal, scan, &total);
    int take_equal = need - equal_before;
    take_equal = take_equal < 0 ? 0 : (take_equal > equal ? equal : take_equal);
    int64_t out = block_exclusive_scan(above + take_equal, scan, &total);
    for (int64_t c = c0; c < c1; ++c) {
        const uint64_t key = score_key(s[c]);
        bool keep = key > prefix;
        if (key == prefix && take_equal > 0) {
            keep = true;
            --take_equal;
        }
        if (keep) sel[out++] = (int32_t)c;
    }
}
}  // namespace

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

void launch_indexer_select(const uint16_t* idx_rows, StepPos p0, const float* q, const float* w, int64_t n,
                           int64_t n_head, int64_t d, int64_t top_k, double* scores, int64_t ld, int32_t* selected,
                           void* s) {
    if (n <= 0) return;
    if (n_head <= 0 || n_head > kThreads) {
        throw ArgumentError(DS4_GPU_WHO ": indexer_select: " + std::to_string(n_head) + " indexer heads (1.." +
                            std::to_string(kThreads) + " supported)");
    }
    if (top_k <= 0 || top_k > 0x7fffffff) {
        throw ArgumentError(DS4_GPU_WHO ": indexer_select: top_k " + std::to_string(top_k) + " out of range");
    }
    if (n_head * (d + 1) + kScoreRows * d > kScoreSmem) {
        throw ArgumentError(DS4_GPU_WHO ": indexer_select: " + std::to_string(n_head) + " heads of " +
                            std::to_string(d) + " do not fit the scores kernel's shared memory");
    }
    const int64_t gx = (ld + kScoreRows - 1) / kScoreRows;
    if (gx > 0x7fffffff || n > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": indexer_select: " + std::to_string(n) + " tokens x " + std::to_string(ld) +
                            " rows exceed the launch grid");
    }
    ds4_launch(ds4_indexer_scores_kernel, dim3(gx > 0 ? (unsigned)gx : 1u, (unsigned)n), dim3(kThreads), s, idx_rows,
               p0, q, w, n, n_head, d, top_k, scores, ld);
    DS4_GPU_CHECK_LAUNCH("ds4_indexer_scores_kernel");
    ds4_launch(ds4_indexer_topk_kernel, dim3((unsigned)n), dim3(kThreads), s, p0, top_k, (const double*)scores, ld,
               selected);
    DS4_GPU_CHECK_LAUNCH("ds4_indexer_topk_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
