// The Q8_0 matmul of a prefill block on int8 columns as a GEMM (DS4KIT_GPU_INT8=all; calls of
// more than 8 columns): a block of 8 warps computes 16 rows x 32 columns, the weights read once
// per 32 columns where the GEMV kernels of gpu_matmul_int8.cu read them once per 4. Each output
// keeps the GEMV's order bit for bit (gpu_int8.h chain_dot_q8_0_int8): warp k is chain k, blocks
// k, k + 8, ... with acc = fma(dw, dx * isum, acc) from 0 in block order; the 8 chain sums are
// then added in gpu_tree.h's tree (s = 4, 2, 1). isum, a block's integer dot, is exact, so the
// tensor cores (gpu_mma_s8.h) give the same bits as the GEMV's dp4a: prefill == verify == decode.
// A step stages 8 consecutive blocks of the 16 rows and the 32 columns, one a warp.
#include "backend/gpu/gpu_cp_async.h"
#include "backend/gpu/gpu_mma_s8.h"

#include <stdint.h>

namespace {
constexpr int kGemmCols = 32;  // columns a block: 4 tiles of 8
constexpr int kGemmRows = 16;  // rows a block: one mma tile
constexpr int kGemmThreads = 256;
constexpr int kGemmWarps = kGemmThreads / 32;
static_assert(kGemmWarps == ds4::gpu::kInt8Chains, "a warp a chain");
constexpr int kGemmBlocks = kGemmWarps;             // Q8_0 blocks a step
constexpr int kGemmOutputs = kGemmRows * kGemmCols;  // a block's outputs (two a thread in the tree)
constexpr int kGemmP = 8 * kGemmBlocks + 4;         // words from a tile row to the next (gpu_mma_s8.h: 32 m + 4)
static_assert(kGemmP % 4 == 0, "16-byte stores and copies into the staged rows");
constexpr int kGemmAChunks = kGemmRows * kGemmBlocks * 2, kGemmBChunks = kGemmCols * kGemmBlocks * 2;  // 16 bytes
static_assert(kGemmAChunks % kGemmThreads == 0 && kGemmBChunks % kGemmThreads == 0, "whole chunks a thread");

// 16 bytes at p: by one load (mode 2: 16-byte aligned), two (1: 8-byte) or bytes (0).
__device__ inline ds4::gpu::uint4_t load16(const uint8_t* p, int mode) {
    if (mode == 2) return *reinterpret_cast<const ds4::gpu::uint4_t*>(p);
    if (mode == 1) {
        const ds4::gpu::Word2 lo = reinterpret_cast<const ds4::gpu::Word2*>(p)[0];
        const ds4::gpu::Word2 hi = reinterpret_cast<const ds4::gpu::Word2*>(p)[1];
        return ds4::gpu::uint4_t{lo.lo, lo.hi, hi.lo, hi.hi};
    }
    return ds4::gpu::uint4_t{ds4::gpu::rd32(p), ds4::gpu::rd32(p + 4), ds4::gpu::rd32(p + 8), ds4::gpu::rd32(p + 12)};
}
}  // namespace

// Block (i, j): rows 16 i .. of W (n_rows rows of n, the backend's split Q8_0 rows) against
// int8 columns 32 j .. of the call (column c's group: int8 column c x_groups + g, g = the
// block's first row / x_group_rows, which must hold all its rows), Y[c * ldy + r]. mode:
// load16's for the rows. PIPE (gemm_int8_pipe_for says when): step j + 1's rows, scales and
// columns are copied into the second of two buffers (gpu_cp_async.h) while step j computes, so
// a step's loads wait behind the previous step's products instead of after a barrier; each
// thread's copies land before the barrier that precedes their reads. The products and their order
// are the same either way.
template <bool PIPE>
__device__ inline void gemm_int8(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows, const int8_t* q,
                                 const float* d, int ncols, float* Y, int64_t ldy, int mode, int64_t x_group_rows,
                                 int64_t x_groups) {
    constexpr int P = kGemmP, NB = kGemmBlocks, S = PIPE ? 2 : 1;  // S: buffers
    alignas(16) __shared__ uint32_t As[S][kGemmRows * P], Bs[S][kGemmCols * P];
    alignas(16) __shared__ float Bd[S][kGemmCols * NB];
    // The rows' scales: as floats, or (PIPE) the f16 bytes as copied, converted where read.
    alignas(16) __shared__ float Ad[PIPE ? 1 : kGemmRows * NB];
    alignas(16) __shared__ uint16_t Ah[S][PIPE ? kGemmRows * NB : 8];
    __shared__ float Xs[kGemmWarps * kGemmOutputs];  // every chain's sums, for the tree
    const int t = (int)ds4_thread_x(), warp = t / 32, lane = t % 32;
    const int64_t row0 = (int64_t)ds4_block_x() * kGemmRows;
    const int col0 = (int)ds4_block_y() * kGemmCols;
    const int64_t nb = n / ds4::gpu::kInt8Block;
    const int64_t g = row0 / x_group_rows;
    auto row_ptr = [&](int r) {
        const int64_t gr = row0 + r < n_rows ? row0 + r : n_rows - 1;  // rows past the end repeat the last
        return W + (uint64_t)gr * row_bytes;
    };
    auto col_k = [&](int c) {
        const int gc = col0 + c < ncols ? col0 + c : ncols - 1;  // so do columns
        return (int64_t)gc * x_groups + g;
    };
    // Stage step j (blocks 8 j .. 8 j + 8, slot e = block 8 j + e, or zeros past the row's end)
    // straight into shared memory (the loads of a step are issued together).
    auto stage = [&](int64_t j) {
        for (int c = t; c < kGemmAChunks; c += kGemmThreads) {  // row c / (2 NB), 16 bytes c % (2 NB)
            const int r = c / (2 * NB), e = (c % (2 * NB)) / 2, half = c % 2;
            const int64_t b = j * NB + e;
            const ds4::gpu::uint4_t v = b < nb ? load16(row_ptr(r) + 32 * b + 16 * half, mode) : ds4::gpu::uint4_t{0, 0, 0, 0};
            *reinterpret_cast<ds4::gpu::uint4_t*>(As[0] + r * P + 8 * e + 4 * half) = v;  // 16-byte aligned
        }
        for (int c = t; c < kGemmRows * NB; c += kGemmThreads) {
            const int64_t b = j * NB + c % NB;
            const uint8_t* sp = row_ptr(c / NB) + 32 * nb + 2 * b;
            Ad[c] = b >= nb ? 0.0f : mode > 0 ? ds4::gpu::f16_at<true>(sp) : ds4::gpu::f16_at<false>(sp);
        }
        for (int c = t; c < kGemmBChunks; c += kGemmThreads) {
            const int col = c / (2 * NB), e = (c % (2 * NB)) / 2, half = c % 2;
            const int64_t b = j * NB + e;
            const ds4::gpu::uint4_t v =
                b < nb ? *reinterpret_cast<const ds4::gpu::uint4_t*>(q + col_k(col) * n + 32 * b + 16 * half)
                       : ds4::gpu::uint4_t{0, 0, 0, 0};
            *reinterpret_cast<ds4::gpu::uint4_t*>(Bs[0] + col * P + 8 * e + 4 * half) = v;
        }
        for (int c = t; c < kGemmCols * NB; c += kGemmThreads) {
            const int64_t b = j * NB + c % NB;
            Bd[0][c] = b < nb ? d[col_k(c / NB) * nb + b] : 0.0f;
        }
    };
    // PIPE: step j's copies into buffer j % 2, then one commit (every step is whole: no zeros).
    auto stage_async = [&](int64_t j) {
        const int buf = (int)(j % S);
        for (int c = t; c < kGemmAChunks; c += kGemmThreads) {
            const int r = c / (2 * NB), e = (c % (2 * NB)) / 2, half = c % 2;
            ds4::gpu::cp_async16(As[buf] + r * P + 8 * e + 4 * half, row_ptr(r) + 32 * (j * NB + e) + 16 * half);
        }
        if (t < kGemmRows) ds4::gpu::cp_async16(Ah[buf] + t * NB, row_ptr(t) + 32 * nb + 2 * j * NB);  // NB f16
        for (int c = t; c < kGemmBChunks; c += kGemmThreads) {
            const int col = c / (2 * NB), e = (c % (2 * NB)) / 2, half = c % 2;
            ds4::gpu::cp_async16(Bs[buf] + col * P + 8 * e + 4 * half, q + col_k(col) * n + 32 * (j * NB + e) + 16 * half);
        }
        if (t < 2 * kGemmCols) {  // NB floats a column, 4 a copy
            const int col = t / 2, h = t % 2;
            ds4::gpu::cp_async16(Bd[buf] + col * NB + 4 * h, d + col_k(col) * nb + j * NB + 4 * h);
        }
        ds4::gpu::cp_async_commit();
    };

    // This thread's outputs: n-tile nt (columns 8 nt ..), element i: row lane / 4 + 8 (i / 2),
    // column 8 nt + 2 (lane % 4) + i % 2 (gpu_mma_s8.h's C layout); acc: chain `warp`'s sums.
    float acc[4][4];
    for (int nt = 0; nt < 4; ++nt) {
        for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
    }
    const int r_lo = lane / 4;
    const int64_t steps = (nb + NB - 1) / NB;
    if constexpr (PIPE) stage_async(0);
    for (int64_t j = 0; j < steps; ++j) {
        const int buf = (int)(j % S);
        if constexpr (PIPE) {
            // Buffer (j + 1) % 2 was last read by step j - 1, before that step's closing barrier.
            if (j + 1 < steps) {
                stage_async(j + 1);
            } else {
                ds4::gpu::cp_async_commit();  // an empty group: the wait below counts the same
            }
            ds4::gpu::cp_async_wait<1>();  // this thread's copies of step j have landed
        } else {
            stage(j);
        }
        ds4_sync_block();
        // A slot past the row's end holds zero codes and scales: fma(0, dx * 0, acc) = acc (acc
        // is never -0: it starts at +0, and a sum is -0 only when both terms are), as the GEMV,
        // which drops that step's sums.
        float dw[2];
        if constexpr (PIPE) {
            dw[0] = ds4::gpu::f16_bits_to_f32(Ah[buf][r_lo * NB + warp]);
            dw[1] = ds4::gpu::f16_bits_to_f32(Ah[buf][(r_lo + 8) * NB + warp]);
        } else {
            dw[0] = Ad[r_lo * NB + warp], dw[1] = Ad[(r_lo + 8) * NB + warp];
        }
        for (int nt = 0; nt < 4; ++nt) {
            int bsum[4];  // kSmallIntBias + the integer dots
            ds4::gpu::tile_isum(As[buf], Bs[buf], P, 0, 8 * nt, warp, lane, bsum, ds4::gpu::kSmallIntBias);
            for (int i = 0; i < 4; ++i) {
                const float dx = Bd[buf][(8 * nt + 2 * (lane % 4) + i % 2) * NB + warp];
                acc[nt][i] = ds4_fmaf(dw[i / 2], dx * ds4::gpu::biased_int_to_f32(bsum[i]), acc[nt][i]);
            }
        }
        ds4_sync_block();
    }
    // The chains' tree, every thread two of the block's 512 outputs: each warp hands its chain's
    // sums over (output o = column * 16 + row, so the stores below are whole column segments),
    // then p[x] + p[x + s] for s = 4, 2, 1.
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int o = (8 * nt + 2 * (lane % 4) + i % 2) * kGemmRows + r_lo + 8 * (i / 2);
            Xs[warp * kGemmOutputs + o] = acc[nt][i];
        }
    }
    ds4_sync_block();
#pragma unroll
    for (int o = t; o < kGemmOutputs; o += kGemmThreads) {
        float p[kGemmWarps];
#pragma unroll
        for (int k = 0; k < kGemmWarps; ++k) p[k] = Xs[k * kGemmOutputs + o];
#pragma unroll
        for (int s = kGemmWarps / 2; s >= 1; s /= 2) {
#pragma unroll
            for (int x = 0; x < s; ++x) p[x] = p[x] + p[x + s];
        }
        const int64_t r = row0 + o % kGemmRows;
        const int c = col0 + o / kGemmRows;
        if (r < n_rows && c < ncols) Y[(int64_t)c * ldy + r] = p[0];
    }
}

extern "C" __global__ void DS4_DOT_BOUNDS ds4_gemm_int8_kernel(const uint8_t* W, uint64_t row_bytes, int64_t n,
                                                               int64_t n_rows, const int8_t* q, const float* d,
                                                               int ncols, float* Y, int64_t ldy, int mode,
                                                               int64_t x_group_rows, int64_t x_groups) {
    ds4_kernel_entry();
    gemm_int8<false>(W, row_bytes, n, n_rows, q, d, ncols, Y, ldy, mode, x_group_rows, x_groups);
}

extern "C" __global__ void DS4_DOT_BOUNDS ds4_gemm_int8_pipe_kernel(const uint8_t* W, uint64_t row_bytes, int64_t n,
                                                                    int64_t n_rows, const int8_t* q, const float* d,
                                                                    int ncols, float* Y, int64_t ldy, int mode,
                                                                    int64_t x_group_rows, int64_t x_groups) {
    ds4_kernel_entry();
    gemm_int8<true>(W, row_bytes, n, n_rows, q, d, ncols, Y, ldy, mode, x_group_rows, x_groups);
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

bool gemm_int8_for(int ncols, int64_t x_group_rows, int64_t x_groups) {
    // DS4KIT_GPU_INT8_GEMM=never keeps prefill on the GEMV kernels (the same bits: to measure).
    if (env_choice("DS4KIT_GPU_INT8_GEMM", {"auto", "never"}) == 1) return false;
    return ncols > kNarrowCols && (x_groups == 1 || x_group_rows % kGemmRows == 0);
}

namespace {
// The pipelined kernel where its copies are asynchronous (CUDA; HIP keeps the kernel it was
// compiled and checked with) and every copy is whole and aligned: 16-byte rows (mode 2), whole
// 8-block steps, 16-byte aligned columns and scales. DS4KIT_GPU_GEMM_PIPE=never keeps the
// one-buffer kernel (the same bits: to measure).
bool gemm_int8_pipe_for(int mode, int64_t n_in, const Int8Cols& x) {
    if (env_choice("DS4KIT_GPU_GEMM_PIPE", {"auto", "never"}) == 1) return false;
#if defined(__CUDACC__) && !defined(__HIPCC__)
    const auto a16 = [](const void* p) { return (uintptr_t)p % 16 == 0; };
    return mode == 2 && n_in % (ds4::gpu::kInt8Block * kGemmBlocks) == 0 && a16(x.q) && a16(x.d);
#else
    (void)mode, (void)n_in, (void)x;
    return false;
#endif
}
}  // namespace

void launch_gemm_int8(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, const Int8Cols& x,
                      int ncols, float* Y, int64_t ldy, int64_t x_group_rows, int64_t x_groups, void* s) {
    const int mode = dot_wide_at(16, W, row_bytes) ? 2 : dot_wide_at(8, W, row_bytes) ? 1 : 0;
    const dim3 grid((unsigned)((n_rows + kGemmRows - 1) / kGemmRows), (unsigned)((ncols + kGemmCols - 1) / kGemmCols));
    const bool pipe = gemm_int8_pipe_for(mode, n_in, x);
    ds4_launch(pipe ? ds4_gemm_int8_pipe_kernel : ds4_gemm_int8_kernel, grid, dim3(kGemmThreads), s, W, row_bytes, n_in,
               n_rows, x.q, x.d, ncols, Y, ldy, mode, x_group_rows, x_groups);
    DS4_GPU_CHECK_LAUNCH(pipe ? "ds4_gemm_int8_pipe_kernel" : "ds4_gemm_int8_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
