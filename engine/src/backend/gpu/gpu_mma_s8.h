// The integer tile product of gpu_gemm_int8.cu: a warp's 16 rows x 8 columns x 32 int8 values
// (one Q8_0 block), exact in int32 whatever computes it, so every path gives the same bits:
// - CUDA sm_80 and later: mma.sync m16n8k32 s8 (tensor cores), the fragments loaded from shared
//   memory as the PTX ISA lays them out (lane = 4 g + t: A rows g and g + 8, words t and 4 + t;
//   B column g, words t and 4 + t; C rows g and g + 8, columns 2 t and 2 t + 1);
// - elsewhere (HIP gfx1151, the HIP-CPU build): each lane's four sums by dp4a (v_dot4 on gfx1151)
//   straight from shared memory;
// - DS4_MMA_EMULATE (host simulation only): the fragments as the CUDA path loads them, and the
//   product computed from every lane's fragments as the PTX ISA defines it, so the host checks
//   the fragment loads the GPU will run.
// A and B tiles: a row (or column) of blocks of 32 int8 (8 words each), rows P words apart.
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_int8.h"

namespace ds4 {
namespace gpu {

// P, the words from one tile row (or column) to the next, must be 4 more than a multiple of 32,
// so the 32 lanes' fragment loads (row g, word t: P g + t) fall in 32 different banks.

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__clang__)
#define DS4_MMA_TENSOR 1
#elif defined(DS4_MMA_EMULATE)
#define DS4_MMA_TENSOR 1
#else
#define DS4_MMA_TENSOR 0
#endif

#if defined(DS4_MMA_EMULATE)
// The product as PTX defines it, from every lane's fragments (host simulation: all threads of
// the block call it together; warp w's lanes are threads 32 w ..), plus c0.
inline void mma_s8_16x8x32(const uint32_t a[4], const uint32_t b[2], int c[4], int c0) {
    static uint32_t fa[32][32][4], fb[32][32][2];  // [warp][lane]
    const int t = (int)ds4_thread_x(), w = t / 32, lane = t % 32;
    for (int i = 0; i < 4; ++i) fa[w][lane][i] = a[i];
    for (int i = 0; i < 2; ++i) fb[w][lane][i] = b[i];
    ds4_sync_block();
    auto A = [&](int row, int k) {  // lane 4 g + t: a0 (g, 4t..), a1 (g + 8, 4t..), a2 (g, 16 + 4t..), a3 (g + 8, 16 + 4t..)
        const int g = row % 8, reg = (row / 8) + 2 * (k / 16), tt = (k % 16) / 4;
        return (int)(int8_t)(fa[w][4 * g + tt][reg] >> (8 * (k % 4)));
    };
    auto B = [&](int k, int col) {  // lane 4 n + t: b0 (4t.., n), b1 (16 + 4t.., n)
        const int tt = (k % 16) / 4;
        return (int)(int8_t)(fb[w][4 * col + tt][k / 16] >> (8 * (k % 4)));
    };
    const int g = lane / 4, tt = lane % 4;
    for (int i = 0; i < 4; ++i) {
        const int row = g + 8 * (i / 2), col = 2 * tt + i % 2;
        int s = c0;
        for (int k = 0; k < 32; ++k) s += A(row, k) * B(k, col);
        c[i] = s;
    }
    ds4_sync_block();
}
#endif

#if DS4_MMA_TENSOR
// c = the m16n8k32 product of the lane's A fragment a and B fragment b (the layouts above), plus
// c0 in every element (the accumulator's start: gpu_int8.h kSmallIntBias saves an add a sum).
__device__ inline void mma_s8_fragments(const uint32_t a[4], const uint32_t b[2], int c[4], int c0 = 0) {
#if defined(DS4_MMA_EMULATE)
    mma_s8_16x8x32(a, b, c, c0);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %10, %10, %10};"
        : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c0));
#endif
}
#endif

// c[i] (lane 4 g + t of the warp): c0 plus the integer dot over block kb (words 8 kb .. 8 kb + 8)
// of A row r0 + g + 8 (i / 2) with B column n0 + 2 t + i % 2, A and B tiles in shared memory,
// rows P words apart.
__device__ inline void tile_isum(const uint32_t* A, const uint32_t* B, int P, int r0, int n0, int kb, int lane,
                                 int c[4], int c0 = 0) {
    const int g = lane / 4, t = lane % 4, w0 = 8 * kb;
#if DS4_MMA_TENSOR
    const uint32_t a[4] = {A[(r0 + g) * P + w0 + t], A[(r0 + g + 8) * P + w0 + t], A[(r0 + g) * P + w0 + 4 + t],
                           A[(r0 + g + 8) * P + w0 + 4 + t]};
    const uint32_t b[2] = {B[(n0 + g) * P + w0 + t], B[(n0 + g) * P + w0 + 4 + t]};
    mma_s8_fragments(a, b, c, c0);
#else
    for (int i = 0; i < 4; ++i) {
        const uint32_t* ar = A + (r0 + g + 8 * (i / 2)) * P + w0;
        const uint32_t* bc = B + (n0 + 2 * t + i % 2) * P + w0;
        int s = c0;
        for (int w = 0; w < 8; ++w) s = dot4_s8(ar[w], bc[w], s);
        c[i] = s;
    }
#endif
}

}  // namespace gpu
}  // namespace ds4
