// The Q8_0 matmul of a prefill block on int8 columns as a GEMM (DS4KIT_GPU_INT8=all; calls of
// more than 8 columns): a block of 8 warps computes 16 WR rows x 32 columns, the weights read
// once per 32 columns where the GEMV kernels of gpu_matmul_int8.cu read them once per 4. Each
// output keeps the GEMV's order bit for bit (gpu_int8.h segment_dot_q8_0_int8): within a
// segment of G blocks, acc = fma(dw, dx * isum, acc) from 0 in block order; the segments are
// then added left to right, fold = fold + acc from fold = -0 (so the first passes through
// unchanged). isum, a block's integer dot, is exact, so the tensor cores (gpu_mma_s8.h) give
// the same bits as the GEMV's dp4a: prefill == verify == decode.
//
// The 8 warps are WR slabs of 16 rows times WK segments at once (WK = min(8, L), WR = 8 / WK):
// in a round, warp (wr, k) sums segment s0 + k of its slab, then warp (wr, 0) folds the round's
// WK sums in order; so a matrix of few rows and long rows (wo_b: 4096 x 8192, 32 segments)
// still gives 256 blocks, and one of many rows and short ones (q_b: 32768 x 1024, 4 segments)
// 1024.
#include "backend/gpu/gpu_mma_s8.h"

#include <stdint.h>

namespace {
constexpr int kGemmCols = 32;  // columns a block: 4 tiles of 8
constexpr int kGemmThreads = 256;
constexpr int kGemmWarps = kGemmThreads / 32;

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

// The shape of a WK instance: WR slabs of 16 rows; KT blocks of each of the WK segments staged
// a step (WK KT = 4 or 8 blocks); tile rows of P words (a multiple of 32 plus 4: the fragment
// loads of gpu_mma_s8.h fall in 32 banks).
template <int WK>
struct GemmShape {
    static constexpr int WR = kGemmWarps / WK, rows = 16 * WR, KT = WK >= 4 ? 1 : 4 / WK, blocks = WK * KT,
                         P = 8 * blocks + 4;
    static constexpr int a_chunks = rows * blocks * 2, b_chunks = kGemmCols * blocks * 2;  // 16-byte chunks a step
    static_assert(a_chunks % kGemmThreads == 0 && b_chunks % kGemmThreads == 0, "whole chunks a thread");
};

// Block (i, j): rows rows*i .. of W (n_rows rows of n, the backend's split Q8_0 rows) against
// int8 columns 32 j .. of the call (column c's group: int8 column c x_groups + g, g = the
// block's first row / x_group_rows, which must hold all its rows), Y[c * ldy + r]. L: the
// GEMV's segments for this tensor (a multiple of WK); mode: load16's for the rows.
template <int WK>
__global__ void DS4_DOT_BOUNDS ds4_gemm_int8_kernel(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows,
                                                    const int8_t* q, const float* d, int ncols, float* Y, int64_t ldy,
                                                    int L, int mode, int64_t x_group_rows, int64_t x_groups) {
    ds4_kernel_entry();
    using S = GemmShape<WK>;
    constexpr int P = S::P, KT = S::KT, NB = S::blocks;
    __shared__ uint32_t As[S::rows * P], Bs[kGemmCols * P];
    __shared__ float Ad[S::rows * NB], Bd[kGemmCols * NB];
    __shared__ float Xs[WK > 1 ? (WK - 1) * S::WR * 32 * 16 : 1];  // a round's segment sums, warps k > 0
    const int t = (int)ds4_thread_x(), warp = t / 32, lane = t % 32, wr = warp / WK, wk = warp % WK;
    const int64_t row0 = (int64_t)ds4_block_x() * S::rows;
    const int col0 = (int)ds4_block_y() * kGemmCols;
    const int64_t nb = n / ds4::gpu::kInt8Block, G = (nb + L - 1) / L;
    const int64_t g = row0 / x_group_rows;
    auto row_ptr = [&](int r) {
        const int64_t gr = row0 + r < n_rows ? row0 + r : n_rows - 1;  // rows past the end repeat the last
        return W + (uint64_t)gr * row_bytes;
    };
    auto col_k = [&](int c) {
        const int gc = col0 + c < ncols ? col0 + c : ncols - 1;  // so do columns
        return (int64_t)gc * x_groups + g;
    };
    // Slot e (0 .. NB) of a step: block j + e % KT of segment s0 + e / KT, or -1 past the
    // segment's end or the row's.
    auto block_of = [&](int64_t s0, int64_t j, int e) -> int64_t {
        const int64_t jj = j + e % KT, b = (s0 + e / KT) * G + jj;
        return jj < G && b < nb ? b : -1;
    };
    // Stage one step straight into shared memory (the loads of a step are issued together).
    auto stage = [&](int64_t s0, int64_t j) {
        for (int c = t; c < S::a_chunks; c += kGemmThreads) {  // row c / (2 NB), 16 bytes c % (2 NB)
            const int r = c / (2 * NB), e = (c % (2 * NB)) / 2, half = c % 2;
            const int64_t b = block_of(s0, j, e);
            const ds4::gpu::uint4_t v = b >= 0 ? load16(row_ptr(r) + 32 * b + 16 * half, mode) : ds4::gpu::uint4_t{0, 0, 0, 0};
            uint32_t* p = As + r * P + 8 * e + 4 * half;
            p[0] = v.a, p[1] = v.b, p[2] = v.c, p[3] = v.d;
        }
        for (int c = t; c < S::rows * NB; c += kGemmThreads) {
            const int64_t b = block_of(s0, j, c % NB);
            Ad[c] = b >= 0 ? ds4::gpu::h2f(row_ptr(c / NB) + 32 * nb + 2 * b) : 0.0f;
        }
        for (int c = t; c < S::b_chunks; c += kGemmThreads) {
            const int col = c / (2 * NB), e = (c % (2 * NB)) / 2, half = c % 2;
            const int64_t b = block_of(s0, j, e);
            const ds4::gpu::uint4_t v =
                b >= 0 ? *reinterpret_cast<const ds4::gpu::uint4_t*>(q + col_k(col) * n + 32 * b + 16 * half)
                       : ds4::gpu::uint4_t{0, 0, 0, 0};
            uint32_t* p = Bs + col * P + 8 * e + 4 * half;
            p[0] = v.a, p[1] = v.b, p[2] = v.c, p[3] = v.d;
        }
        for (int c = t; c < kGemmCols * NB; c += kGemmThreads) {
            const int64_t b = block_of(s0, j, c % NB);
            Bd[c] = b >= 0 ? d[col_k(c / NB) * nb + b] : 0.0f;
        }
    };

    // This thread's outputs: n-tile nt (columns 8 nt ..), element i: row 16 wr + lane / 4 +
    // 8 (i / 2), column 8 nt + 2 (lane % 4) + i % 2 (gpu_mma_s8.h's C layout).
    float acc[4][4], fold[4][4];
    for (int nt = 0; nt < 4; ++nt) {
        for (int i = 0; i < 4; ++i) fold[nt][i] = -0.0f;
    }
    const int r_lo = 16 * wr + lane / 4;
    for (int64_t s0 = 0; s0 < L; s0 += WK) {  // a round: segments s0 .. s0 + WK, warp k on s0 + k
        for (int nt = 0; nt < 4; ++nt) {
            for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
        }
        for (int64_t j = 0; j < G; j += KT) {
            stage(s0, j);
            ds4_sync_block();
            for (int kb = 0; kb < KT; ++kb) {
                const int e = wk * KT + kb;  // this warp's slot
                if (j + kb >= G) break;      // the same for every thread
                // A slot past the row's end holds zero codes and scales: it adds
                // fma(0, dx * 0, acc) = acc, as the GEMV, which stops there, keeps acc.
                const float dw[2] = {Ad[r_lo * NB + e], Ad[(r_lo + 8) * NB + e]};
                for (int nt = 0; nt < 4; ++nt) {
                    int isum[4];
                    ds4::gpu::tile_isum(As, Bs, P, 16 * wr, 8 * nt, e, lane, isum);
                    for (int i = 0; i < 4; ++i) {
                        const float dx = Bd[(8 * nt + 2 * (lane % 4) + i % 2) * NB + e];
                        acc[nt][i] = ds4_fmaf(dw[i / 2], dx * ds4::gpu::small_int_to_f32(isum[i]), acc[nt][i]);
                    }
                }
            }
            ds4_sync_block();
        }
        // The round's fold, in segment order: warps k > 0 hand their sums to warp (wr, 0).
        if (wk > 0) {
            float* x = Xs + (((wk - 1) * S::WR + wr) * 32 + lane) * 16;
            for (int nt = 0; nt < 4; ++nt) {
                for (int i = 0; i < 4; ++i) x[4 * nt + i] = acc[nt][i];
            }
        }
        ds4_sync_block();
        if (wk == 0) {
            for (int nt = 0; nt < 4; ++nt) {
                for (int i = 0; i < 4; ++i) fold[nt][i] = fold[nt][i] + acc[nt][i];
            }
            for (int k = 1; k < WK; ++k) {
                const float* x = Xs + (((k - 1) * S::WR + wr) * 32 + lane) * 16;
                for (int nt = 0; nt < 4; ++nt) {
                    for (int i = 0; i < 4; ++i) fold[nt][i] = fold[nt][i] + x[4 * nt + i];
                }
            }
        }
        ds4_sync_block();
    }
    if (wk == 0) {
        for (int nt = 0; nt < 4; ++nt) {
            for (int i = 0; i < 4; ++i) {
                const int64_t r = row0 + r_lo + 8 * (i / 2);
                const int c = col0 + 8 * nt + 2 * (lane % 4) + i % 2;
                if (r < n_rows && c < ncols) Y[(int64_t)c * ldy + r] = fold[nt][i];
            }
        }
    }
}

#define DS4_GEMM_INT8(WK)                                                                                      \
    template __global__ void ds4_gemm_int8_kernel<WK>(const uint8_t*, uint64_t, int64_t, int64_t, const int8_t*, \
                                                      const float*, int, float*, int64_t, int, int, int64_t, int64_t);
DS4_GEMM_INT8(1)
DS4_GEMM_INT8(2)
DS4_GEMM_INT8(4)
DS4_GEMM_INT8(8)

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {
int gemm_segments_a_round(int L) { return L < kGemmWarps ? L : kGemmWarps; }
int gemm_rows(int L) { return 16 * (kGemmWarps / gemm_segments_a_round(L)); }
}  // namespace

bool gemm_int8_for(int ncols, int L, int64_t x_group_rows, int64_t x_groups) {
    // DS4KIT_GPU_INT8_GEMM=never keeps prefill on the GEMV kernels (the same bits: to measure).
    if (env_choice("DS4KIT_GPU_INT8_GEMM", {"auto", "never"}) == 1) return false;
    return ncols > kNarrowCols && (x_groups == 1 || x_group_rows % gemm_rows(L) == 0);
}

void launch_gemm_int8(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, int L, const Int8Cols& x,
                      int ncols, float* Y, int64_t ldy, int64_t x_group_rows, int64_t x_groups, void* s) {
    const int mode = dot_wide_at(16, W, row_bytes) ? 2 : dot_wide_at(8, W, row_bytes) ? 1 : 0;
    const int WK = gemm_segments_a_round(L);
    const int64_t rows = gemm_rows(L);
    const dim3 grid((unsigned)((n_rows + rows - 1) / rows), (unsigned)((ncols + kGemmCols - 1) / kGemmCols));
    auto k = WK == 1 ? ds4_gemm_int8_kernel<1> : WK == 2 ? ds4_gemm_int8_kernel<2> : WK == 4 ? ds4_gemm_int8_kernel<4>
                                                                                            : ds4_gemm_int8_kernel<8>;
    ds4_launch(k, grid, dim3(kGemmThreads), s, W, row_bytes, n_in, n_rows, x.q, x.d, ncols, Y, ldy, L, mode,
               x_group_rows, x_groups);
    DS4_GPU_CHECK_LAUNCH("ds4_gemm_int8_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
