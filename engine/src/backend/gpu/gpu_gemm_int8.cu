// The Q8_0 matmul of a prefill block on int8 columns as a GEMM (DS4KIT_GPU_INT8=all; calls of
// more than 8 columns): a block of 256 threads computes 128 rows x 32 columns, the weights read
// once per 32 columns where the GEMV kernels of gpu_matmul_int8.cu read them once per 4. Each
// output keeps the GEMV's order bit for bit (gpu_int8.h segment_dot_q8_0_int8): K is walked
// block by block in order, acc = fma(dw, dx * isum, acc) from 0 within a segment of G blocks,
// and at each segment's end fold = fold + acc (fold from -0, so the first segment passes
// through unchanged). isum,
// a block's integer dot, is exact, so the tensor cores (gpu_mma_s8.h) give the same bits as
// the GEMV's dp4a: prefill == verify == decode.
#include "backend/gpu/gpu_mma_s8.h"

#include <stdint.h>

namespace {
constexpr int kGemmRows = 128;   // rows a block: 8 warps of 16
constexpr int kGemmCols = 32;    // columns a block: 4 tiles of 8
constexpr int kGemmKBlocks = 4;  // Q8_0 blocks (of 32) staged at a time
constexpr int kGemmThreads = 256;
static_assert(kGemmRows == 16 * (kGemmThreads / 32), "a warp a 16-row slab");
static_assert(ds4::gpu::kMmaStride >= 8 * kGemmKBlocks, "a tile row holds the staged blocks");

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

// What a thread stages of one K step: 4 chunks of A's codes, 2 of its scales, 1 chunk of B's
// codes and (threads < 128) 1 of its scales.
struct Staged {
    ds4::gpu::uint4_t a[4], b;
    float ad[2], bd;
};
}  // namespace

// Block (i, j): rows 128 i .. of W (n_rows rows of n, the backend's split Q8_0 rows) against
// int8 columns 32 j .. of the call (column c's group: int8 column c x_groups + g, g = the
// block's first row / x_group_rows, which must hold all 128 rows), Y[c * ldy + r]. L: the
// GEMV's segments for this tensor (int8_q8_lanes); mode: load16's for the rows.
extern "C" __global__ void DS4_DOT_BOUNDS ds4_gemm_int8_kernel(
    const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows, const int8_t* q, const float* d, int ncols,
    float* Y, int64_t ldy, int L, int mode, int64_t x_group_rows, int64_t x_groups) {
    ds4_kernel_entry();
    using ds4::gpu::kMmaStride;
    __shared__ uint32_t As[kGemmRows * kMmaStride], Bs[kGemmCols * kMmaStride];
    __shared__ float Ad[kGemmRows * kGemmKBlocks], Bd[kGemmCols * kGemmKBlocks];
    const int t = (int)ds4_thread_x(), warp = t / 32, lane = t % 32;
    const int64_t row0 = (int64_t)ds4_block_x() * kGemmRows;
    const int col0 = (int)ds4_block_y() * kGemmCols;
    const int64_t nb = n / ds4::gpu::kInt8Block, G = (nb + L - 1) / L;
    const int64_t g = row0 / x_group_rows;

    // What this thread stages: A chunks t + 256 j (row c / 8, 16 bytes c % 8 of the 128), A
    // scales t + 256 j (row e / 4, block e % 4), B chunk t (column t / 8, 16 bytes t % 8), B
    // scale t (column t / 4, block t % 4).
    auto row_ptr = [&](int r) {
        const int64_t gr = row0 + r < n_rows ? row0 + r : n_rows - 1;  // rows past the end repeat the last
        return W + (uint64_t)gr * row_bytes;
    };
    auto col_k = [&](int c) {
        const int gc = col0 + c < ncols ? col0 + c : ncols - 1;  // so do columns
        return (int64_t)gc * x_groups + g;
    };
    auto stage = [&](int64_t b0, Staged& s) {
        for (int j = 0; j < 4; ++j) {
            const int c = t + kGemmThreads * j, r = c / 8, part = c % 8;
            const bool live = b0 + part / 2 < nb;
            s.a[j] = live ? load16(row_ptr(r) + 32 * b0 + 16 * part, mode) : ds4::gpu::uint4_t{0, 0, 0, 0};
        }
        for (int j = 0; j < 2; ++j) {
            const int e = t + kGemmThreads * j, r = e / kGemmKBlocks, kb = e % kGemmKBlocks;
            s.ad[j] = b0 + kb < nb ? ds4::gpu::h2f(row_ptr(r) + 32 * nb + 2 * (b0 + kb)) : 0.0f;
        }
        {
            const int c = t / 8, part = t % 8;
            s.b = b0 + part / 2 < nb ? *reinterpret_cast<const ds4::gpu::uint4_t*>(q + col_k(c) * n + 32 * b0 + 16 * part)
                                     : ds4::gpu::uint4_t{0, 0, 0, 0};
        }
        if (t < kGemmCols * kGemmKBlocks) {
            const int c = t / kGemmKBlocks, kb = t % kGemmKBlocks;
            s.bd = b0 + kb < nb ? d[col_k(c) * nb + b0 + kb] : 0.0f;
        }
    };
    auto store = [&](const Staged& s) {
        for (int j = 0; j < 4; ++j) {
            const int c = t + kGemmThreads * j, r = c / 8, part = c % 8;
            uint32_t* p = As + r * kMmaStride + 4 * part;
            p[0] = s.a[j].a, p[1] = s.a[j].b, p[2] = s.a[j].c, p[3] = s.a[j].d;
        }
        for (int j = 0; j < 2; ++j) Ad[t + kGemmThreads * j] = s.ad[j];
        uint32_t* p = Bs + (t / 8) * kMmaStride + 4 * (t % 8);
        p[0] = s.b.a, p[1] = s.b.b, p[2] = s.b.c, p[3] = s.b.d;
        if (t < kGemmCols * kGemmKBlocks) Bd[t] = s.bd;
    };

    // Outputs of this thread: n-tile nt (columns 8 nt ..), element i: row 16 warp + lane / 4 +
    // 8 (i / 2), column 8 nt + 2 (lane % 4) + i % 2 (gpu_mma_s8.h's C layout).
    float acc[4][4], fold[4][4];
    for (int nt = 0; nt < 4; ++nt) {
        for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f, fold[nt][i] = -0.0f;
    }
    const int r_lo = 16 * warp + lane / 4;
    Staged next;
    stage(0, next);
    for (int64_t b0 = 0; b0 < nb; b0 += kGemmKBlocks) {
        store(next);
        ds4_sync_block();
        if (b0 + kGemmKBlocks < nb) stage(b0 + kGemmKBlocks, next);  // in flight while this step computes
        for (int kb = 0; kb < kGemmKBlocks; ++kb) {
            const int64_t b = b0 + kb;
            if (b >= nb) break;  // the same for every thread
            if (b % G == 0 && b > 0) {  // a segment ends: fold it in
                for (int nt = 0; nt < 4; ++nt) {
                    for (int i = 0; i < 4; ++i) fold[nt][i] = fold[nt][i] + acc[nt][i], acc[nt][i] = 0.0f;
                }
            }
            const float dw[2] = {Ad[r_lo * kGemmKBlocks + kb], Ad[(r_lo + 8) * kGemmKBlocks + kb]};
            for (int nt = 0; nt < 4; ++nt) {
                int isum[4];
                ds4::gpu::tile_isum(As, Bs, 16 * warp, 8 * nt, kb, lane, isum);
                for (int i = 0; i < 4; ++i) {
                    const float dx = Bd[(8 * nt + 2 * (lane % 4) + i % 2) * kGemmKBlocks + kb];
                    acc[nt][i] = ds4_fmaf(dw[i / 2], dx * ds4::gpu::small_int_to_f32(isum[i]), acc[nt][i]);
                }
            }
        }
        ds4_sync_block();
    }
    // (The GEMV's lanes past the last block add +0, which changes no sum here: an fma chain
    // from +0 never gives -0, nor does a fold of such sums.)
    for (int nt = 0; nt < 4; ++nt) {
        for (int i = 0; i < 4; ++i) {
            const float v = fold[nt][i] + acc[nt][i];
            const int64_t r = row0 + r_lo + 8 * (i / 2);
            const int c = col0 + 8 * nt + 2 * (lane % 4) + i % 2;
            if (r < n_rows && c < ncols) Y[(int64_t)c * ldy + r] = v;
        }
    }
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

bool gemm_int8_for(int64_t n_rows, int ncols, int64_t x_group_rows, int64_t x_groups) {
    // DS4KIT_GPU_INT8_GEMM=never keeps prefill on the GEMV kernels (the same bits: to measure).
    if (env_choice("DS4KIT_GPU_INT8_GEMM", {"auto", "never"}) == 1) return false;
    return ncols > kNarrowCols && (x_groups == 1 || x_group_rows % kGemmRows == 0) && n_rows <= 0x7fffffffLL;
}

void launch_gemm_int8(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, int L, const Int8Cols& x,
                      int ncols, float* Y, int64_t ldy, int64_t x_group_rows, int64_t x_groups, void* s) {
    const int mode = dot_wide_at(16, W, row_bytes) ? 2 : dot_wide_at(8, W, row_bytes) ? 1 : 0;
    const dim3 grid((unsigned)((n_rows + kGemmRows - 1) / kGemmRows), (unsigned)((ncols + kGemmCols - 1) / kGemmCols));
    ds4_launch(ds4_gemm_int8_kernel, grid, dim3(kGemmThreads), s, W, row_bytes, n_in, n_rows, x.q, x.d, ncols, Y, ldy,
               L, mode, x_group_rows, x_groups);
    DS4_GPU_CHECK_LAUNCH("ds4_gemm_int8_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
