// The matmul (GEMV-style) kernels for every weight type the engine computes with, one source
// for CUDA and HIP; gpu_matmul_types_*.cu instantiate them, a part of the types each (gpu_dot.h
// DS4_GPU_TYPES_PART_*), and gpu_matmul.cu launches them. A block of kDotBlock threads computes kDotBlock / L groups of R rows
// (groups of L lanes, gpu_dot.h) for a batch of up to NC columns; the reduction is gpu_dot.h's
// group_dot, so every column is bitwise what ncols = 1 gives (backend_compare checks it on
// every run), and L comes from the tensor's shape, not the call's.
// Accumulation is float (the CPU backend accumulates in double): the normalised error
// against the CPU is a few float ulps times the chain length (n_in / (8 L) chunks plus
// log2 L tree levels).
#pragma once
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_dot.h"

#include <stdint.h>

namespace {
constexpr int kCols = ds4::gpu::kNarrowCols;  // the widest column batch (a verify of width 8 is one launch)
}  // namespace

// Block `block` of the matrix, column batch g (block y): R consecutive rows per group of L
// lanes, kDotBlock / L groups, for columns c0 + g * NC .. + nc. Rows r of x group r /
// x_group_rows read their columns from X + that group times x_group_stride (a grouped matmul
// in one launch; x_group_rows is a multiple of R). part: the kernel's shared memory.
template <int NC, int R, uint32_t TYPE>
__device__ inline void matmul_block(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows, const float* X,
                                    int64_t ldx, int ncols, float* Y, int64_t ldy, const uint64_t* grid, int L,
                                    int wide, int x4, int64_t x_group_rows, int64_t x_group_stride, unsigned block,
                                    float* part) {
    const ds4::gpu::Lanes ln = ds4::gpu::dot_lanes_of_thread(L);
    const int64_t r0 = ds4::gpu::group_row_in(ln, R, block);
    const int c_first = (int)ds4_block_y() * NC;
    const int nc = ncols - c_first < NC ? ncols - c_first : NC;
    const float* Xg = X + (r0 < n_rows ? r0 / x_group_rows : 0) * x_group_stride;
    const float* x[NC];
    for (int c = 0; c < NC; ++c) x[c] = Xg + (int64_t)(c_first + (c < nc ? c : 0)) * ldx;
    const uint8_t* rows[R];  // rows past the matrix repeat its last row; their sums are dropped
    for (int r = 0; r < R; ++r) rows[r] = W + (uint64_t)(r0 + r < n_rows ? r0 + r : n_rows - 1) * row_bytes;
    float acc[R * NC], out[R * NC];
    for (int c = 0; c < R * NC; ++c) acc[c] = 0.0f;
    if (r0 < n_rows) ds4::gpu::group_dot<NC, R, TYPE>(rows, n, ln, wide != 0, x, nc, x4 != 0, grid, acc);
    ds4::gpu::group_reduce<R * NC>(acc, ln, part, out);
    if (ln.lane == 0) {
        for (int r = 0; r < R; ++r) {  // constant bounds: out stays in registers
            for (int c = 0; c < NC; ++c) {
                if (r0 + r < n_rows && c < nc) Y[(int64_t)(c_first + c) * ldy + r0 + r] = out[r * NC + c];
            }
        }
    }
}

// Whether kernels of NC columns a pass run a strided grid (block b computes matmul_blocks b, b +
// the grid's x, b + twice that, ...; the launcher takes one wave of blocks at most, gpu_matmul.cu
// matmul_grid_x): the one-column kernels of decode. With more columns the loop's live values
// spilled (nvcc sm_90, 8 columns: 136 bytes of stack against 64), so those keep a block per
// row block.
__host__ __device__ constexpr bool strided_grid(int NC) { return NC == 1; }

// Blocks (b, g): matmul_block b of the matrix (and those after it on a strided grid).
template <int NC, int R, uint32_t TYPE>
__global__ void DS4_DOT_BOUNDS ds4_matmul_kernel(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows, const float* X,
                                  int64_t ldx, int ncols, float* Y, int64_t ldy, const uint64_t* grid, int L, int wide,
                                  int x4, int64_t x_group_rows, int64_t x_group_stride) {
    ds4_kernel_entry();
    __shared__ float part[R * NC * ds4::gpu::kDotBlock];
    if constexpr (strided_grid(NC)) {
        const unsigned blocks = ds4::gpu::dot_row_blocks(n_rows, L, R);
        for (unsigned b = ds4_block_x(); b < blocks; b += ds4_grid_dim_x()) {
            matmul_block<NC, R, TYPE>(W, row_bytes, n, n_rows, X, ldx, ncols, Y, ldy, grid, L, wide, x4, x_group_rows,
                                      x_group_stride, b, part);
        }
    } else {
        matmul_block<NC, R, TYPE>(W, row_bytes, n, n_rows, X, ldx, ncols, Y, ldy, grid, L, wide, x4, x_group_rows,
                                  x_group_stride, ds4_block_x(), part);
    }
}

// Matrices of one type over the same columns in one launch (launch_matmul_set): matrix i
// takes the blocks from its first_block up to the next matrix's, each block computed as
// ds4_matmul_kernel computes it for that matrix alone (its own lanes L and wide loads), so
// every row has a lone launch's bits. A step's projections of the attention input are 2 to 6
// small matrices; one launch saves each the fixed cost of a kernel.
struct MatmulSetPart {
    const uint8_t* W;
    uint64_t row_bytes;
    int64_t n_rows;
    float* Y;
    int64_t ldy;
    int L, wide;
    unsigned first_block;
};
constexpr int kMatmulSetParts = 6;
struct MatmulSetArgs {
    MatmulSetPart part[kMatmulSetParts];
    int n_parts;
    unsigned blocks;  // the matrices' blocks together (a strided grid may launch fewer)
};

// The matrix of a set that block b computes (the float and the int8 set kernels).
__device__ inline MatmulSetPart set_part_of(const MatmulSetArgs& a, unsigned b) {
    MatmulSetPart q = a.part[0];
#pragma unroll
    for (int i = 1; i < kMatmulSetParts; ++i) {  // constant indices: the parameters stay in their bank
        if (i < a.n_parts && b >= a.part[i].first_block) q = a.part[i];
    }
    return q;
}

template <int NC, uint32_t TYPE>
__global__ void DS4_DOT_BOUNDS ds4_matmul_set_kernel(MatmulSetArgs a, int64_t n, const float* X, int64_t ldx,
                                                     int ncols, const uint64_t* grid, int x4) {
    ds4_kernel_entry();
    __shared__ float part[NC * ds4::gpu::kDotBlock];
    const unsigned stride = strided_grid(NC) ? ds4_grid_dim_x() : a.blocks;  // one pass: a block per row block
    for (unsigned b = ds4_block_x(); b < a.blocks; b += stride) {
        const MatmulSetPart q = set_part_of(a, b);
        matmul_block<NC, 1, TYPE>(q.W, q.row_bytes, n, q.n_rows, X, ldx, ncols, q.Y, q.ldy, grid, q.L, q.wide, x4,
                                  q.n_rows, 0, b - q.first_block, part);
    }
}

// Every instantiation the launchers use, for one type (the files gpu_matmul_types_*.cu expand
// it), spelled out so a device-only compile (which never sees the host code) still emits each
// kernel.
#define DS4_MATMUL_SIG(NC, R, T)                                                                                   \
    template __global__ void ds4_matmul_kernel<NC, R, T>(const uint8_t*, uint64_t, int64_t, int64_t, const float*,    \
                                                         int64_t, int, float*, int64_t, const uint64_t*, int, int, int, \
                                                         int64_t, int64_t);
#define DS4_MATMUL_NC(NC, T) DS4_MATMUL_SIG(NC, 1, T) DS4_MATMUL_SIG(NC, ds4::gpu::max_group_rows<NC>(), T)
#define DS4_MATMUL_SET_SIG(NC, T)                                                                             \
    template __global__ void ds4_matmul_set_kernel<NC, T>(MatmulSetArgs, int64_t, const float*, int64_t, int,     \
                                                          const uint64_t*, int);
#define DS4_MATMUL_INSTANCES(T)                                                                                     \
    DS4_MATMUL_NC(1, T) DS4_MATMUL_NC(2, T) DS4_MATMUL_NC(4, T) DS4_MATMUL_NC(8, T) DS4_MATMUL_SIG(ds4::gpu::kWideCols, ds4::gpu::kWideRows, T) \
    DS4_MATMUL_SET_SIG(1, T) DS4_MATMUL_SET_SIG(2, T) DS4_MATMUL_SET_SIG(4, T) DS4_MATMUL_SET_SIG(8, T)
static_assert(kCols == 8, "DS4_MATMUL_INSTANCES lists NC = 1, 2, 4, kCols");

#if DS4_GPU_HOST_CODE
#include <functional>

#include "backend/gpu/gpu_kernels.h"  // MatmulSetJob

namespace ds4 {
namespace gpu {

// How launch_matmul_set (and its int8 form) launches jobs over the same columns: matrices of
// one type that may share a set (matmul_set_member, DS4KIT_GPU_MATMUL_SETS) go to set_of in
// sets of up to kMatmulSetParts, every other matrix to lone, in the jobs' order.
void for_each_matmul_set(const MatmulSetJob* jobs, int n_jobs, int ncols,
                         const std::function<void(const MatmulSetJob&)>& lone,
                         const std::function<void(const MatmulSetJob* const*, int)>& set_of);

// The set kernels' arguments (float and int8, gpu_matmul.cu): matrix i of jobs with
// lanes(rows, n_in) lanes, word loads where its rows allow wide_alignment, its blocks after
// those of the matrices before it; .blocks: all of them (ArgumentError past a grid's).
MatmulSetArgs matmul_set_args(const MatmulSetJob* const* jobs, int n_jobs, int64_t n_in, uint64_t wide_alignment,
                              int (*lanes)(int64_t rows, int64_t n_in));

using MatmulKernel = void (*)(const uint8_t*, uint64_t, int64_t, int64_t, const float*, int64_t, int, float*, int64_t,
                              const uint64_t*, int, int, int, int64_t, int64_t);
using MatmulSetKernel = void (*)(MatmulSetArgs, int64_t, const float*, int64_t, int, const uint64_t*, int);

// The kernels of one weight type, by column batch (1, 2, 4, 8: index 0..3): one-row groups,
// max_group_rows<NC>() rows a group, the set kernel; and the wide calls' kernel.
struct MatmulKernels {
    MatmulKernel rows1[4], rows_many[4], wide;
    MatmulSetKernel set[4];
    uint64_t wide_alignment;  // gpu_dequant.h wide_alignment<T>() (0: no wide loads)
};
template <uint32_t T>
MatmulKernels matmul_kernels_of() {
    constexpr int R1 = max_group_rows<1>(), R2 = max_group_rows<2>(), R4 = max_group_rows<4>(), R8 = max_group_rows<8>();
    return MatmulKernels{{ds4_matmul_kernel<1, 1, T>, ds4_matmul_kernel<2, 1, T>, ds4_matmul_kernel<4, 1, T>,
                          ds4_matmul_kernel<8, 1, T>},
                         {ds4_matmul_kernel<1, R1, T>, ds4_matmul_kernel<2, R2, T>, ds4_matmul_kernel<4, R4, T>,
                          ds4_matmul_kernel<8, R8, T>},
                         ds4_matmul_kernel<kWideCols, kWideRows, T>,
                         {ds4_matmul_set_kernel<1, T>, ds4_matmul_set_kernel<2, T>, ds4_matmul_set_kernel<4, T>,
                          ds4_matmul_set_kernel<8, T>},
                         (uint64_t)wide_alignment<T>()};
}

// *k = the kernels of `type` if part P of the types (gpu_dot.h DS4_GPU_TYPES_PART_P) holds it
// (defined in gpu_matmul_types_P.cu); false otherwise.
bool matmul_kernels_part0(uint32_t type, MatmulKernels* k);
bool matmul_kernels_part1(uint32_t type, MatmulKernels* k);
bool matmul_kernels_part2(uint32_t type, MatmulKernels* k);
bool matmul_kernels_part3(uint32_t type, MatmulKernels* k);
bool matmul_kernels_part4(uint32_t type, MatmulKernels* k);

}  // namespace gpu
}  // namespace ds4

#define DS4_MATMUL_PART_CASE(T) \
    case T: *k = matmul_kernels_of<T>(); return true;
#define DS4_MATMUL_PART_LOOKUP(P)                                             \
    namespace ds4 {                                                           \
    namespace gpu {                                                           \
    bool matmul_kernels_part##P(uint32_t type, MatmulKernels* k) {            \
        switch (type) {                                                       \
            DS4_GPU_TYPES_PART_##P(DS4_MATMUL_PART_CASE) default: return false; \
        }                                                                     \
    }                                                                         \
    }                                                                         \
    }
#else
#define DS4_MATMUL_PART_LOOKUP(P)
#endif
