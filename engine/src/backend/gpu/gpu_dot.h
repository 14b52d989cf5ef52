// The one reduction every matrix-vector product of the GPU backend uses (matmul, the
// experts of moe): a block of kDotBlock threads splits into groups of L lanes (L = 32, 64,
// 128 or 256), and each group computes R (1, 2 or 4) consecutive weight rows against
// up to NC columns (the columns' values loaded once for the R rows).
//
// Memory: each lane loads its chunks straight from global memory, with word or 16-byte loads
// for the types the real model streams (Q8_0, Q2_K, Q4_K, Q4_0, ROCmFP4, ROCmFP2, F16, BF16,
// F32: gpu_dequant.h load_chunk_wide and BlockWalk) when the row's alignment allows, and the
// byte decoder otherwise; the 32 lanes of a warp read neighbouring chunks, so a warp's loads are
// coalesced, and nothing waits on a barrier before the final tree.
//
// Order (what makes verify == decode bitwise): lane l reads chunks of 8 consecutive
// elements l, l + L, l + 2L, ... in ascending order (gpu_dequant.h BlockWalk: Q2_K and Q4_K
// lanes take, in blocks l / 8, l / 8 + L / 8, ..., the 4 chunks of a block whose codes share
// words; Q4_0, MXFP4, ROCmFP4 and ROCmFP2 lanes whole blocks l, l + L, ...; all in ascending
// order); per chunk p = the 8 products w_j * x_j summed in element order with fmaf from
// 0, then acc = fmaf(d, p, acc) (d: the chunk's factor; the K-quants Q2_K and Q4_K, whose
// element is dl * q_j - ml, take p over the codes q_j, then acc = fmaf(dl, p, acc) and
// acc = fmaf(-ml, sx, acc) with sx the chunk's 8 x added in element order from 0). The L partial sums are then added
// in gpu_tree.h's fixed tree. Nothing depends on NC, R or on how many columns are live: NC
// columns and R rows run copies of the one-row, one-column arithmetic side by side, and with
// contraction off no instantiation can fuse differently.
// L is chosen from the matrix's shape alone (dot_lanes), never from the number of columns.
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_dequant.h"
#include "backend/gpu/gpu_tree.h"

namespace ds4 {
namespace gpu {

constexpr int kDotBlock = 256;  // threads of a matrix-kernel block (a multiple of 32 and 64)
static_assert(kDotBlock == 256, "gpu_compat.h DS4_DOT_BOUNDS is written for blocks of 256");

struct alignas(16) Float4 {
    float a, b, c, d;
};

// x[e0 .. e0 + 8) into v (len <= 8 values; x4: the address is 16-byte aligned and len == 8).
__device__ inline void load_x8(const float* x, int len, bool x4, float* v) {
    if (x4) {
        const Float4 a = reinterpret_cast<const Float4*>(x)[0], b = reinterpret_cast<const Float4*>(x)[1];
        v[0] = a.a, v[1] = a.b, v[2] = a.c, v[3] = a.d, v[4] = b.a, v[5] = b.b, v[6] = b.c, v[7] = b.d;
    } else {
        for (int j = 0; j < kChunk; ++j) v[j] = j < len ? x[j] : 0.0f;
    }
}

// 1 if rows at base + k * stride allow load_chunk_wide's loads of a type whose wide loads need
// `alignment` (wide_alignment<T>(); 0: none) (host side); dot_wide<T>: of type T.
inline int dot_wide_at(uint64_t alignment, const void* base, uint64_t stride) {
    return alignment != 0 && ((uint64_t)(uintptr_t)base % alignment == 0) && stride % alignment == 0 ? 1 : 0;
}
template <uint32_t T>
inline int dot_wide(const void* base, uint64_t stride) {
    return dot_wide_at((uint64_t)wide_alignment<T>(), base, stride);
}

// Rows a group computes side by side: R > 1 loads each lane's column values once for R rows
// (x had been loaded again for every row: the L1 traffic, not the weights' bytes, bounded
// decode). Only a matrix with rows enough to fill the GPU with R-row groups gains (a 24-row
// one would run on 6 blocks), so the launchers take max_group_rows<NC>() where
// row_groups_for(rows of the tensor, times the experts a token uses) (gpu_kernels.h) and 1
// elsewhere. Every row keeps its own one-row arithmetic, so R changes no bit.
template <int NC>
__host__ __device__ constexpr int max_group_rows() {
    return NC == 1 ? 4 : 2;
}

// Calls of more than kNarrowCols columns (prefill blocks) are wide: kWideCols columns per pass
// by kWideRows rows per group (gpu_matmul.cu wide_rows_for, gpu_moe.cu's shared expert).
constexpr int kNarrowCols = 8, kWideCols = 4, kWideRows = 4;

// Host side too: 1 if columns at x + c * ld allow load_x8's 16-byte loads; the blocks that
// hold `rows` rows at kDotBlock / L groups of R rows a block.
inline int dot_x_aligned(const float* x, int64_t ld) { return ((uintptr_t)x % 16 == 0 && ld % 4 == 0) ? 1 : 0; }
__host__ __device__ inline unsigned dot_row_blocks(int64_t rows, int L, int R) {
    const int64_t per = (int64_t)(kDotBlock / L) * R;
    return (unsigned)((rows + per - 1) / per);
}

// Where a group sits in its block: the group index and the lane within it.
struct Lanes {
    int L, group, lane;
};
__device__ inline Lanes dot_lanes_of_thread(int L) {
    const int t = (int)ds4_thread_x();
    return Lanes{L, t / L, t % L};
}
// The first of the R consecutive rows this thread's group computes in block `block` of its
// matrix (dot_row_blocks blocks cover a matrix); group_row: in block x.
__device__ inline int64_t group_row_in(const Lanes& ln, int R, unsigned block) {
    return ((int64_t)block * (kDotBlock / ln.L) + ln.group) * R;
}
__device__ inline int64_t group_row(const Lanes& ln, int R) { return group_row_in(ln, R, ds4_block_x()); }

// The 8 products of a chunk with column values xv, summed in element order by fma from 0.
// Constant trip counts keep w and xv in registers (a loop to `len` puts them on the stack;
// so does a loop over the chunks in flight that is not unrolled, hence the pragmas below).
__device__ inline float chunk_dot(const float* w, const float* xv, int len) {
    float p = 0.0f;
    if (len == kChunk) {
        for (int jj = 0; jj < kChunk; ++jj) p = ds4_fmaf(w[jj], xv[jj], p);
    } else {
        for (int jj = 0; jj < kChunk; ++jj) {
            if (jj < len) p = ds4_fmaf(w[jj], xv[jj], p);
        }
    }
    return p;
}

// One chunk (elements e .. e + len) of R rows (w[r], d[r]) into acc[r * NC + c] =
// fma(d[r], p_rc, acc[r * NC + c]) for c < nc, when `live`: column c's values are loaded once
// for the R rows. A chunk that is not live (a repeated one past the row's end) is computed
// and dropped by a select, so the caller's chunks stay one branch-free stretch of code.
// m (an affine walk's chunk, the K-quants: element j is d[r] * w[r][j] - m[r], w the codes):
// per column also the chunk's x summed in element order from 0 (sx, once for the R rows), then
// per row acc = fma(-m[r], sx, acc) after the product's fma.
template <int NC, int R>
__device__ inline void chunk_products(const float (*w)[kChunk], const float* d, const float* m, int64_t e, int len,
                                      bool live, const float* const* x, int nc, bool x4, float* acc) {
    for (int c = 0; c < NC; ++c) {
        if (c >= nc) break;  // (a constant-bound loop: acc and x stay in registers)
        float xv[kChunk];
        load_x8(x[c] + e, len, x4 && len == kChunk, xv);
        float sx = 0.0f;
        if (m) {
            for (int j = 0; j < kChunk; ++j) sx += xv[j];
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float a = ds4_fmaf(d[r], chunk_dot(w[r], xv, len), acc[r * NC + c]);
            if (m) a = ds4_fmaf(-m[r], sx, a);
            acc[r * NC + c] = live ? a : acc[r * NC + c];
        }
    }
}

// Fetches (BlockWalk::fetch) a lane has in flight per row: 8 / R when a fetch is one chunk's
// raw words, 4 / R otherwise (one chunk decoded at fetch time, or a walk's 4 chunks: Q2_K,
// Q4_K and the whole-block types), so about 8 raw chunks or 4 fetches across the R rows.
template <uint32_t TYPE, bool WIDE, int R>
__host__ __device__ constexpr int chunks_ahead() {
    static_assert(R == 1 || R == 2 || R == 4, "rows per group: 1, 2 or 4");
    using Walk = BlockWalk<TYPE, WIDE>;
    return Walk::raw && Walk::chunks == 1 ? 8 / R : 4 / R;
}

// The lane's chunks of R rows in order, A blocks at a time: first the loads of all A x R
// (BlockWalk::fetch), then each decoded and multiplied in order. An index past the end fetches
// the last block again and its products are dropped, so the loads carry no branch and are
// in flight together (a plain unrolled loop left a bound check between chunks, and one
// chunk's loads in flight). WIDE picks the decoder once, outside the loop.
template <int NC, int R, uint32_t TYPE, bool WIDE>
__device__ inline void lane_chunks(const uint8_t* const* rows, int64_t n, const Lanes& ln, const float* const* x,
                                   int nc, bool x4, const uint64_t* grid, float* acc) {
    constexpr int A = chunks_ahead<TYPE, WIDE, R>();
    if constexpr (TypeInfo<TYPE>::block > 1) {
        using Walk = BlockWalk<TYPE, WIDE>;
        constexpr int QK = TypeInfo<TYPE>::block;
        constexpr int per_block = QK / kChunk / Walk::chunks;  // lanes sharing a block
        if (ln.L % per_block == 0 && n % QK == 0) {
            // The same chunks in the same order, by block: L is a multiple of a block's lanes
            // (dot_lanes picks L >= 32), so every block this lane visits it visits at the same
            // slot, and the offsets and shifts that follow from the slot are computed once.
            const int slot = ln.lane % per_block;
            const int64_t blocks = n / QK, step = ln.L / per_block;
            for (int64_t b0 = ln.lane / per_block; b0 < blocks; b0 += A * step) {
                typename Walk::Raw raw[A][R];
#pragma unroll
                for (int u = 0; u < A; ++u) {
                    const int64_t b = b0 + u * step < blocks ? b0 + u * step : blocks - 1;
#pragma unroll
                    for (int r = 0; r < R; ++r) Walk::fetch(rows[r], b, blocks, slot, grid, raw[u][r]);
                }
#pragma unroll
                for (int u = 0; u < A; ++u) {
                    const bool live = b0 + u * step < blocks;
                    const int64_t b = live ? b0 + u * step : blocks - 1;
#pragma unroll
                    for (int s = 0; s < Walk::chunks; ++s) {
                        float w[R][kChunk], d[R], m[R];
#pragma unroll
                        for (int r = 0; r < R; ++r) {
                            if constexpr (Walk::affine) {
                                d[r] = Walk::decode(raw[u][r], slot, s, w[r], &m[r]);
                            } else {
                                d[r] = Walk::decode(raw[u][r], slot, s, w[r]);
                            }
                        }
                        chunk_products<NC, R>(w, d, Walk::affine ? m : nullptr, b * QK + Walk::j0(slot, s), kChunk,
                                              live, x, nc, x4, acc);
                    }
                }
            }
            return;
        }
    }
    // Float rows (and quant rows of a part block): chunk k of the row, the last one possibly short.
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    for (int64_t k0 = ln.lane; k0 < chunks; k0 += A * ln.L) {
        float w[A][R][kChunk], d[A][R];
#pragma unroll
        for (int u = 0; u < A; ++u) {
            const int64_t k = k0 + u * ln.L < chunks ? k0 + u * ln.L : chunks - 1;
#pragma unroll
            for (int r = 0; r < R; ++r) d[u][r] = load_chunk_wide<TYPE>(rows[r], k, n, grid, w[u][r], WIDE);
        }
#pragma unroll
        for (int u = 0; u < A; ++u) {
            const bool live = k0 + u * ln.L < chunks;
            const int64_t e = (live ? k0 + u * ln.L : chunks - 1) * kChunk;
            // Quant rows are whole blocks, so only float rows have a short last chunk.
            const int len = TypeInfo<TYPE>::block > 1 || n - e >= kChunk ? kChunk : (int)(n - e);
            chunk_products<NC, R>(w[u], d[u], nullptr, e, len, live, x, nc, x4, acc);
        }
    }
}

// acc[r * NC + c] (per lane) += the lane's share of rows[r] . x[c] for c < nc. Every row
// pointer must be a row of the matrix (callers repeat the last row for rows past it and drop
// their results). wide: the rows allow load_chunk_wide's loads; x4: every x[c] is 16-byte
// aligned. The fast path needs both (as every call of the real model has them) and is compiled
// with x4 a constant: with x4 a parameter the compiler had predicated load_x8's 8 scalar loads
// beside its 2 vector loads: 8 issue slots spent on every chunk of 8 weights of a column. The
// other path (byte decoder, x4 as given) reads the same values.
template <int NC, int R, uint32_t TYPE>
__device__ inline void group_dot(const uint8_t* const* rows, int64_t n, const Lanes& ln, bool wide,
                                 const float* const* x, int nc, bool x4, const uint64_t* grid, float* acc) {
    if constexpr (wide_alignment<TYPE>() != 0) {
        if (wide && x4) {
            lane_chunks<NC, R, TYPE, true>(rows, n, ln, x, nc, true, grid, acc);
            return;
        }
    }
    lane_chunks<NC, R, TYPE, false>(rows, n, ln, x, nc, x4, grid, acc);
}

// The groups' partial sums added in the fixed tree (gpu_tree.h): on return out[c] holds sum c
// (for a group of R rows and NC columns, NS = R * NC sums) in lane 0 of each group. `part` is
// shared memory of NS * kDotBlock floats. Every thread calls it.
// Where the target has 32-lane shuffles the tree's last five levels (16 .. 1) run on them, in
// the tree's order, so the sums keep their bits: a group of 32 lanes (a warp, as dot_lanes gives
// most matrices) then touches no shared memory and waits on no barrier, where the shared tree
// took four barriers and a shared-memory round trip a level (Nsight Compute, step 26: a q_b
// warp spent a third of its instructions outside its chunks); larger groups take their levels
// above 16 in shared memory first.
template <int NS>
__device__ inline void group_reduce(const float* acc, const Lanes& ln, float* part, float* out) {
    const int t = ln.group * ln.L + ln.lane;
#if DS4_GPU_SHUFFLE32
    if (ln.L >= 32) {  // L is the block's, so every thread takes the same branch
        float v[NS];
        for (int c = 0; c < NS; ++c) v[c] = acc[c];
        if (ln.L > 32) {
            for (int c = 0; c < NS; ++c) part[c * kDotBlock + t] = acc[c];
            tree_reduce_to<NS>(part, kDotBlock, ln.group * ln.L, ln.lane, ln.L, 32);
            for (int c = 0; c < NS; ++c) v[c] = part[c * kDotBlock + t];  // lanes 0 .. 31 read the tree's
            ds4_sync_block();  // part may be written again by the caller's next pass
        }
        warp_tree_reduce<NS>(v);
        if (ln.lane == 0) {
            for (int c = 0; c < NS; ++c) out[c] = v[c];
        }
        return;
    }
#endif
    for (int c = 0; c < NS; ++c) part[c * kDotBlock + t] = acc[c];
    tree_reduce<NS>(part, kDotBlock, ln.group * ln.L, ln.lane, ln.L);
    if (ln.lane == 0) {
        for (int c = 0; c < NS; ++c) out[c] = part[c * kDotBlock + t];
    }
    ds4_sync_block();
}

// Every type the matrix kernels decode, for the launchers' switches, in five parts: the matmul
// and expert kernels of each part are compiled in a file of their own (gpu_matmul_types_*.cu,
// gpu_moe_types_*.cu), so a parallel build compiles them side by side (one file had taken
// nvcc four minutes).
#define DS4_GPU_TYPES_PART_0(X) X(0) X(1) X(2)
#define DS4_GPU_TYPES_PART_1(X) X(8) X(10) X(12)
#define DS4_GPU_TYPES_PART_2(X) X(16) X(30) X(39)
#define DS4_GPU_TYPES_PART_3(X) X(100) X(101) X(102)
#define DS4_GPU_TYPES_PART_4(X) X(103) X(104) X(107)
#define DS4_GPU_FOR_EACH_TYPE(X) \
    DS4_GPU_TYPES_PART_0(X) DS4_GPU_TYPES_PART_1(X) DS4_GPU_TYPES_PART_2(X) DS4_GPU_TYPES_PART_3(X) DS4_GPU_TYPES_PART_4(X)

}  // namespace gpu
}  // namespace ds4
