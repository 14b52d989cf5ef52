// Int8 columns for the Q2_K experts, the Q8_0 shared expert and the Q8_0 matmuls (docs/gpu-backend.md,
// "Int8 columns"; gpu_moe_int8.cu and gpu_matmul_int8.cu say when; gpu_int8_columns.cu quantises): a column of n values (n a multiple of 32) becomes
// n int8 codes and n / 32 float scales, per 32 values d = amax / 127 and q = rint(x / d) (half to
// even; d = 0 gives q = 0), as tests/reference/ds4_ref_int8.py quantise_int8 writes it. A Q2_K
// sub-block's 16 codes times the column's 16 int8 values are then an exact integer (four dp4a), where
// the float walk (gpu_dot.h) spends about 5 instructions a weight: the expert GEMVs of decode
// are issue-bound (Nsight Compute on the H200, run 20: issue slots 69% busy, DRAM 21%). A lane
// takes whole sub-blocks of 16 (lane_dot_q2k_int8), so a scale and min serve four dp4a.
// The lanes' sums go through gpu_tree.h's tree, so a row's value depends on L only (the
// matrix's shape), never on the call's columns.
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_dequant.h"
#include "backend/gpu/gpu_dot.h"

namespace ds4 {
namespace gpu {

constexpr int kInt8Block = 32;  // values per int8 scale

// Four products of signed bytes added to c: exact, so every form gives the same integer. On RDNA 3
// and 3.5 (gfx11, Strix Halo's gfx1151) by the instruction itself: clang turns the loop below into
// v_dot4_i32_iu8 in most kernels, but not where the codes are masked bytes (known non-negative, so
// the sign extensions fold away: gpu_moe_gemm_q2k.cu's fallback compiled to scalar products and
// spilled).
#if defined(__HIP_DEVICE_COMPILE__) && !defined(__HIP_CPU_RT__) &&                                              \
    (defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) ||             \
     defined(__gfx1150__) || defined(__gfx1151__) || defined(__gfx1152__))
#define DS4_GPU_SUDOT4 1
#endif
__device__ inline int dot4_s8(uint32_t a, uint32_t b, int c) {
#if defined(__CUDA_ARCH__) && !defined(__clang__)
    return __dp4a((int)a, (int)b, c);
#elif defined(DS4_GPU_SUDOT4)
    return __builtin_amdgcn_sudot4(true, (int)a, true, (int)b, c, false);
#else
    for (int k = 0; k < 4; ++k) c += (int)(int8_t)(a >> (8 * k)) * (int)(int8_t)(b >> (8 * k));
    return c;
#endif
}

// (float)v for |v| < 2^22 without the int-to-float unit: 1.5 * 2^23 + v is a float with v in
// its low bits. A sum that starts at kSmallIntBias instead of 0 (an integer dot's accumulator)
// is already such a float: biased_int_to_f32 takes it without the add.
constexpr int kSmallIntBias = 0x4B400000;
__device__ inline float biased_int_to_f32(int biased) { return ds4::num::f32_of((uint32_t)biased) - 12582912.0f; }
__device__ inline float small_int_to_f32(int v) { return biased_int_to_f32(kSmallIntBias + v); }

// Round half to even (the current rounding mode, which kernels never change).
__device__ inline float round_even(float x) {
#if defined(__CUDA_ARCH__) && !defined(__clang__)
    return rintf(x);
#else
    return __builtin_rintf(x);
#endif
}

// The int8 code of v in a block of scale d = amax / 127 (d = 0: 0), as quantise_int8 computes
// it (the division correctly rounded, as nvcc and HIP compile it by default).
__device__ inline int8_t int8_code(float v, float d) {
    float r = d == 0.0f ? 0.0f : round_even(v / d);
    r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
    return (int8_t)(int)r;
}

// The two steps of a block's scale that every writer of int8 columns shares (the quantiser and
// the norm's columns must give the same bytes): the larger magnitude of two (a NaN in b is never
// taken, so the tree's pairing decides, as it must be the same everywhere), and the scale of a
// block's largest magnitude.
__device__ inline float int8_amax(float a, float b) { return a < b ? b : a; }
__device__ inline float int8_scale(float amax) { return amax / 127.0f; }

constexpr int kInt8QuantThreads = 256;  // the quantiser's block: a thread per value, 8 int8 blocks
static_assert(kInt8QuantThreads % kInt8Block == 0, "whole int8 blocks a block");
inline int64_t int8_columns_blocks(int64_t values) { return (values + kInt8QuantThreads - 1) / kInt8QuantThreads; }

// Value i (thread t of its block, v zero past `values`) of the quantiser's block into q[i], and
// d[i / 32] by its int8 block's first thread. The block's amax is a max (no rounding: any order
// gives it), here a tree over shared memory. Every thread of the block calls it.
__device__ inline void int8_columns_store(int64_t i, float v, int64_t values, int8_t* q, float* d) {
    __shared__ float mag[kInt8QuantThreads];
    const int t = (int)ds4_thread_x();
    mag[t] = ds4::num::abs_f32(v);
    ds4_sync_block();
    for (int w = kInt8Block / 2; w > 0; w /= 2) {
        if (t % kInt8Block < w) mag[t] = int8_amax(mag[t], mag[t + w]);
        ds4_sync_block();
    }
    const float scale = int8_scale(mag[t - t % kInt8Block]);
    if (i < values) {
        q[i] = int8_code(v, scale);
        if (t % kInt8Block == 0) d[i / kInt8Block] = scale;
    }
}

// Block b of the quantiser (kInt8QuantThreads threads), thread i = b * kInt8QuantThreads + t:
// value e = i % n of column k = i / n (k = c G + g: group g of column c, at x + c ldx + g
// x_stride) (n is a multiple of 32, so an int8 block never straddles two columns).
__device__ inline void int8_columns_block(int64_t b, const float* x, int64_t ldx, int64_t groups, int64_t x_stride,
                                          int64_t n, int64_t values, int8_t* q, float* d) {
    const int64_t i = b * kInt8QuantThreads + ds4_thread_x();
    float v = 0.0f;
    if (i < values) {
        if (groups == 1 && ldx == n) {  // contiguous columns (the experts' h and SwiGLU output): no divisions
            v = x[i];
        } else {
            const int64_t k = i / n;
            v = x[(k / groups) * ldx + (k % groups) * x_stride + i % n];
        }
    }
    int8_columns_store(i, v, values, q, d);
}

// A row's int8 column where a block of T threads holds it HELD values a thread, value i = t + k T
// in v[k] (rms_norm's register path, gpu_norm.cu, which then needs no quantiser launch): with T a
// multiple of 32, each int8 block is one aligned 32-lane group's k-th values, and its amax comes
// from int8_columns_block's own tree (lane l with l + w for w = 16 .. 1), by shuffles where the
// target has them, else over mag (HELD x T floats of shared memory); amax: HELD x T / 32 floats
// of shared memory. q, d: the row's n codes and n / 32 scales (n a multiple of 32). Every thread
// calls it. Same codes and scales as int8_columns_block of the stored row.
template <int HELD>
__device__ inline void int8_held_row(const float* v, int t, int T, int64_t n, int8_t* q, float* d, float* amax,
                                     float* mag) {
    const int lane = t % kInt8Block, group = t / kInt8Block, groups = T / kInt8Block;
#if DS4_GPU_SHUFFLE32
    (void)mag;
#pragma unroll
    for (int k = 0; k < HELD; ++k) {
        float a = t + (int64_t)k * T < n ? ds4::num::abs_f32(v[k]) : 0.0f;
#pragma unroll
        for (int w = kInt8Block / 2; w > 0; w /= 2) {
            a = int8_amax(a, ds4_shfl_down32(a, w));
        }
        if (lane == 0) amax[k * groups + group] = a;
    }
#else
    for (int k = 0; k < HELD; ++k) mag[k * T + t] = t + (int64_t)k * T < n ? ds4::num::abs_f32(v[k]) : 0.0f;
    ds4_sync_block();
    for (int w = kInt8Block / 2; w > 0; w /= 2) {
        for (int k = 0; k < HELD; ++k) {
            float* m = mag + k * T;
            if (lane < w) m[t] = int8_amax(m[t], m[t + w]);
        }
        ds4_sync_block();
    }
    if (lane == 0) {
        for (int k = 0; k < HELD; ++k) amax[k * groups + group] = mag[k * T + t];
    }
#endif
    ds4_sync_block();
#pragma unroll
    for (int k = 0; k < HELD; ++k) {
        const int64_t i = t + (int64_t)k * T;
        if (i < n) {
            const float scale = int8_scale(amax[k * groups + group]);
            q[i] = int8_code(v[k], scale);
            if (lane == 0) d[i / kInt8Block] = scale;
        }
    }
}

// What a lane of the int8 walk reads of one Q2_K block for one row: a quarter of it, the 64
// weights at 128 n + 32 j + 16 h + k (j = 0..3, k = 0..15; slot = 2 n + h), which are 4
// sub-blocks of 16 and share the 16 code bytes at 32 n + 16 h (sub-block j is bits 2j, 2j + 1
// of each); their 4 scale bytes lie in the 8 at 8 n; and d, dmin.
struct Q2KQuarter {
    uint32_t q[4], sc0, sc1, dd;
};
template <bool WIDE>
__device__ inline void fetch_q2k_quarter(const uint8_t* row, int64_t blk, int slot, Q2KQuarter& r) {
    const uint8_t* b = row + blk * 84;
    const int n = slot / 2, h = slot % 2;
#pragma unroll
    for (int m = 0; m < 4; ++m) r.q[m] = word_at<WIDE>(b, 16 + 32 * n + 16 * h + 4 * m);
    r.sc0 = word_at<WIDE>(b, 8 * n);
    r.sc1 = word_at<WIDE>(b, 8 * n + 4);
    r.dd = word_at<WIDE>(b, 80);
}

// acc[r] (per lane) += the lane's share of rows[r] . x for R Q2_K rows of n values against one
// int8 column (codes xq, scales xd), a quarter block a step: lane l takes quarter l % 4 of
// blocks l / 4, l / 4 + L / 4, ...; per sub-block j of it, with isum the 16 codes' integer dot
// with the column's int8 values, sq those values' sum and dx their block's scale,
// acc = fma(dl, dx * isum, acc), then acc = fma(-ml, dx * sq, acc) (dl, ml: the sub-block's scale
// and min as gpu_dequant.h q2k_scale_min_fma gives them). WIDE: the rows allow word loads. Every row
// pointer must be a row of the matrix (callers repeat the last row past its end).
template <int R, bool WIDE>
__device__ inline void lane_dot_q2k_int8(const uint8_t* const* rows, int64_t n, const Lanes& ln, const int8_t* xq,
                                         const float* xd, float* acc) {
    constexpr int per_block = 4;
    const int slot = ln.lane % per_block, half = slot / 2, h = slot % 2;
    const int64_t blocks = n / 256, step = ln.L / per_block;
    for (int64_t b = ln.lane / per_block; b < blocks; b += step) {
        Q2KQuarter raw[R];
#pragma unroll
        for (int r = 0; r < R; ++r) fetch_q2k_quarter<WIDE>(rows[r], b, slot, raw[r]);
        Q2kScales ks[R];  // the rows' d and dmin, for the quarter's four sub-blocks
#pragma unroll
        for (int r = 0; r < R; ++r) ks[r] = q2k_scales(raw[r].dd);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int64_t e = b * 256 + 128 * half + 32 * j + 16 * h;  // the sub-block's first element
            const uint4_t xw = *reinterpret_cast<const uint4_t*>(xq + e);
            const float dx = xd[e / kInt8Block];
            int sq = dot4_s8(0x01010101u, xw.a, kSmallIntBias);  // biased: a float after one subtraction
            sq = dot4_s8(0x01010101u, xw.b, sq);
            sq = dot4_s8(0x01010101u, xw.c, sq);
            sq = dot4_s8(0x01010101u, xw.d, sq);
            const float dsq = dx * biased_int_to_f32(sq);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                int isum = dot4_s8((raw[r].q[0] >> (2 * j)) & 0x03030303u, xw.a, kSmallIntBias);
                isum = dot4_s8((raw[r].q[1] >> (2 * j)) & 0x03030303u, xw.b, isum);
                isum = dot4_s8((raw[r].q[2] >> (2 * j)) & 0x03030303u, xw.c, isum);
                isum = dot4_s8((raw[r].q[3] >> (2 * j)) & 0x03030303u, xw.d, isum);
                // Sub-block 8 half + 2 j + h: byte (2 j + h) % 4 of scale word j / 2.
                const uint32_t sc = ((j < 2 ? raw[r].sc0 : raw[r].sc1) >> (8 * ((2 * j + h) % 4))) & 0xFFu;
                float ml;
                const float dl = q2k_scale_min_fma(ks[r], sc, &ml);
                acc[r] = ds4_fmaf(dl, dx * biased_int_to_f32(isum), acc[r]);
                acc[r] = ds4_fmaf(-ml, dsq, acc[r]);
            }
        }
    }
}

// The Q8_0 matmuls' walk on int8 columns (gpu_matmul_int8.cu; the prefill GEMM,
// gpu_gemm_int8.cu, gives the same bits): a row's nb blocks in kInt8Chains chains, chain k taking
// blocks k, k + 8, k + 16, ... in order with acc = fma(dw, dx * isum, acc) from 0 (isum the
// block's integer dot with the column, exact; dw, dx the row's and the column's scales), then
// the 8 chain sums added in gpu_tree.h's tree (s = 4, 2, 1). A group of kInt8RowLanes lanes walks
// a row: kInt8ChainLanes lanes a chain (lanes Q k .. Q k + Q - 1 are chain k), each reading 32 / Q
// of its block's codes, so a warp's load is one run of consecutive bytes (step 23's segments, a
// lane's own run of blocks, touched 32 lines a load), and the lanes' integer partial sums meet by
// shuffles, in any order since they are exact. Q changes no bit. The GEMM keeps one chain a warp.
constexpr int kInt8Chains = 8, kInt8ChainLanes = 4, kInt8RowLanes = kInt8ChainLanes * kInt8Chains;
static_assert(kInt8ChainLanes == 2 || kInt8ChainLanes == 4, "a chain's lanes read 16 or 8 bytes of a block");

// The lane's part of a block's isum over its share (32 / Q codes) and, where shuffles exist, the
// chain's sum in its first lane; without them each lane reads the whole block (the same integer).
#if DS4_GPU_SHUFFLE32
constexpr int kInt8LaneWords = 8 / kInt8ChainLanes;
__device__ inline int chain_isum(int p) {
#pragma unroll
    for (int s = 1; s < kInt8ChainLanes; s *= 2) p += ds4_shfl_down32_i(p, s);
    return p;
}
#else
constexpr int kInt8LaneWords = 8;
__device__ inline int chain_isum(int p) { return p; }
#endif

// kInt8LaneWords words at p: WIDE (p aligned to kInt8LoadBytes, the lane's share of a block)
// by one load of them all, else by bytes.
constexpr int kInt8LoadBytes = 4 * kInt8LaneWords;
template <bool WIDE>
__device__ inline void load_words(const uint8_t* p, uint32_t* w) {
    if constexpr (WIDE && kInt8LaneWords == 4) {
        const uint4_t v = *reinterpret_cast<const uint4_t*>(p);
        w[0] = v.a, w[1] = v.b, w[2] = v.c, w[3] = v.d;
    } else {
#pragma unroll
        for (int m = 0; m < kInt8LaneWords; m += 2) {
            if constexpr (WIDE) {
                const Word2 v = reinterpret_cast<const Word2*>(p)[m / 2];
                w[m] = v.lo, w[m + 1] = v.hi;
            } else {
                w[m] = rd32(p + 4 * m), w[m + 1] = rd32(p + 4 * m + 4);
            }
        }
    }
}

// Steps a lane loads before it computes (a step: one block of each of its chain's R rows), so a
// lane has U R x kInt8LoadBytes in flight: with 8-byte shares, decode's one-row groups (wo_b: 32
// steps a row) 8 steps, its 4-row groups 4; calls of several columns reuse each step's words for
// their columns. Wider shares take proportionally fewer steps (the same bytes, no spills).
template <int R, int NC>
__host__ __device__ constexpr int int8_steps_in_flight() {
    constexpr int steps = (R * NC == 1 ? 8 : R * NC <= 4 ? 4 : 1) * 2 / kInt8LaneWords;
    return steps > 0 ? steps : 1;
}

// chain_dot_q8_0_int8's walk of a row in batches of U steps from the chain's first block (wp,
// sp: the rows' codes and scale there; xp, dp: the columns'), each batch's loads first, then its
// products in step order. WHOLE (nb a multiple of 8 U: every Q8_0 matrix of the model): every
// step is live and a batch reads at constant offsets from pointers advanced once a batch (an
// immediate in each load, where a step's 64-bit address had cost four instructions); otherwise
// a step past the row's end reads its last block again and drops the sums.
template <int R, int NC, bool WIDE, bool WHOLE>
__device__ inline void chain_batches(const uint8_t** wp, const uint8_t** sp, const uint8_t** xp, const float** dp,
                                     int64_t nb, int k, float* acc) {
    constexpr int U = int8_steps_in_flight<R, NC>();
    const int64_t steps = (nb + kInt8Chains - 1) / kInt8Chains;
    for (int64_t s0 = 0; s0 < steps; s0 += U) {
        uint32_t w[U][R][kInt8LaneWords], xw[U][NC][kInt8LaneWords];
        float dw[U][R], dx[U][NC];
        bool live[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t b0 = (s0 + u) * kInt8Chains + k;  // the step's block
            live[u] = WHOLE || b0 < nb;
            const int64_t e = WHOLE ? (int64_t)kInt8Chains * u : (live[u] ? b0 : nb - 1) - s0 * kInt8Chains - k;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                load_words<WIDE>(wp[r] + 32 * e, w[u][r]);
                dw[u][r] = f16_at<WIDE>(sp[r] + 2 * e);
            }
#pragma unroll
            for (int c = 0; c < NC; ++c) {
                load_words<true>(xp[c] + 32 * e, xw[u][c]);
                dx[u][c] = dp[c][e];
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
            for (int c = 0; c < NC; ++c) {
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    int p = 0;
#pragma unroll
                    for (int m = 0; m < kInt8LaneWords; ++m) p = dot4_s8(w[u][r][m], xw[u][c][m], p);
                    p = chain_isum(p);
                    const float a = ds4_fmaf(dw[u][r], dx[u][c] * small_int_to_f32(p), acc[r * NC + c]);
                    acc[r * NC + c] = live[u] ? a : acc[r * NC + c];
                }
            }
        }
        constexpr int64_t batch = (int64_t)kInt8Chains * U;  // blocks from one batch to the next
#pragma unroll
        for (int r = 0; r < R; ++r) wp[r] += 32 * batch, sp[r] += 2 * batch;
#pragma unroll
        for (int c = 0; c < NC; ++c) xp[c] += 32 * batch, dp[c] += batch;
    }
}

// acc[r * NC + c] (lane Q k: chain k's sum; other lanes' values are never read) for R Q8_0 rows
// (the backend's split rows: nb x 32 codes, then nb f16 scales) against NC int8 columns (codes
// xq[c], scales xd[c]). Every lane of the group steps together (the shuffles need them all).
// Every row pointer must be a row of the matrix (callers repeat the last row past its end).
// WIDE: the rows allow loads of kInt8LoadBytes.
template <int R, int NC, bool WIDE>
__device__ inline void chain_dot_q8_0_int8(const uint8_t* const* rows, int64_t n, int lane, const int8_t* const* xq,
                                           const float* const* xd, float* acc) {
    constexpr int U = int8_steps_in_flight<R, NC>();
    const int64_t nb = n / kInt8Block;
    const int k = lane / kInt8ChainLanes, off = DS4_GPU_SHUFFLE32 ? 4 * kInt8LaneWords * (lane % kInt8ChainLanes) : 0;
    const uint8_t* wp[R];
    const uint8_t* sp[R];
    const uint8_t* xp[NC];
    const float* dp[NC];
#pragma unroll
    for (int r = 0; r < R; ++r) wp[r] = rows[r] + 32 * k + off, sp[r] = rows[r] + 32 * nb + 2 * k;
#pragma unroll
    for (int c = 0; c < NC; ++c) xp[c] = reinterpret_cast<const uint8_t*>(xq[c]) + 32 * k + off, dp[c] = xd[c] + k;
    if (nb % (kInt8Chains * U) == 0) {
        chain_batches<R, NC, WIDE, true>(wp, sp, xp, dp, nb, k, acc);
    } else {
        chain_batches<R, NC, WIDE, false>(wp, sp, xp, dp, nb, k, acc);
    }
}

// out[c] (lane 0 of the group) = the tree of the 8 chain sums acc[c] of lanes 0, Q, .., 7 Q:
// p[x] = p[x] + p[x + s] for s = 4, 2, 1. t: the thread's index in its block; part: NS x
// kDotBlock floats of shared memory (used without shuffles). Every thread of the block calls it.
template <int NS>
__device__ inline void chain_reduce(float* acc, int lane, int t, float* part, float* out) {
#if DS4_GPU_SHUFFLE32
    (void)t, (void)part;
#pragma unroll
    for (int s = kInt8RowLanes / 2; s >= kInt8ChainLanes; s /= 2) {
#pragma unroll
        for (int c = 0; c < NS; ++c) acc[c] = acc[c] + ds4_shfl_down32(acc[c], s);
    }
    if (lane == 0) {
        for (int c = 0; c < NS; ++c) out[c] = acc[c];
    }
#else
    for (int c = 0; c < NS; ++c) part[c * kDotBlock + t] = acc[c];
    ds4_sync_block();
    if (lane == 0) {
        for (int c = 0; c < NS; ++c) {
            float p[kInt8Chains];
            for (int k = 0; k < kInt8Chains; ++k) p[k] = part[c * kDotBlock + t + kInt8ChainLanes * k];
            for (int s = kInt8Chains / 2; s >= 1; s /= 2) {
                for (int x = 0; x < s; ++x) p[x] = p[x] + p[x + s];
            }
            out[c] = p[0];
        }
    }
    ds4_sync_block();
#endif
}

template <int R>
__device__ inline void group_dot_q2k_int8(const uint8_t* const* rows, int64_t n, const Lanes& ln, bool wide,
                                          const int8_t* xq, const float* xd, float* acc) {
    if (wide) {
        lane_dot_q2k_int8<R, true>(rows, n, ln, xq, xd, acc);
    } else {
        lane_dot_q2k_int8<R, false>(rows, n, ln, xq, xd, acc);
    }
}

// The experts' int8 walk (Q2_K, one column), as group_dot's `wide` chooses the word loads.
template <uint32_t TYPE, int R, int NC>
__device__ inline void int8_group_dot(const uint8_t* const* rows, int64_t n, const Lanes& ln, bool wide,
                                      const int8_t* const* xq, const float* const* xd, float* acc) {
    static_assert(TYPE == 10 && NC == 1, "the experts' int8 walk: Q2_K, one column (the shared Q8_0 expert runs the matmuls')");
    group_dot_q2k_int8<R>(rows, n, ln, wide, xq[0], xd[0], acc);
}

// chain_dot_q8_0_int8 as `wide` chooses the word loads.
template <int R, int NC>
__device__ inline void chain_group_dot_q8_0(const uint8_t* const* rows, int64_t n, int lane, bool wide,
                                            const int8_t* const* xq, const float* const* xd, float* acc) {
    if (wide) {
        chain_dot_q8_0_int8<R, NC, true>(rows, n, lane, xq, xd, acc);
    } else {
        chain_dot_q8_0_int8<R, NC, false>(rows, n, lane, xq, xd, acc);
    }
}

}  // namespace gpu
}  // namespace ds4
