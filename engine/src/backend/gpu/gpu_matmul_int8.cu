// Q8_0 matmuls on int8 columns (DS4KIT_GPU_INT8=all; gpu_kernels.h int8_matmul_for): the
// attention's projections, the head and every other Q8_0 matrix. A Q8_0 block's 32 codes times
// the column's 32 int8 values are an exact integer (eight dp4a), so the float work per weight
// falls to a quarter of an fma, where the float walk (gpu_dot.h) converts and multiplies each
// code. The walk is gpu_int8.h's segment_dot_q8_0_int8 (lane s of L: the s-th run of
// consecutive blocks, then the L segment sums folded left to right), the same for every column
// count and row group, so verify == decode == prefill holds; the oracle is the float64
// reference with int8 columns (tests/gpu/test_gpu_int8.py). A tensor-core prefill walking K in
// order with a segment and a fold accumulator per output can give the same bits
// (docs/gpu-backend.md, "Int8 columns").
#include "backend/gpu/gpu_int8.h"
#include "backend/gpu/gpu_matmul_kernels.h"  // MatmulSetArgs

#include <stdint.h>

// matmul_block's work on int8 columns: R rows a group of L lanes, column batch block y of NC
// columns; column c's group g (rows g x_group_rows ..) is int8 column c x_groups + g.
template <int NC, int R>
__device__ inline void matmul_int8_block(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows,
                                         const int8_t* q, const float* d, int ncols, float* Y, int64_t ldy, int L,
                                         int wide, int64_t x_group_rows, int64_t x_groups, unsigned block,
                                         float* part) {
    const ds4::gpu::Lanes ln = ds4::gpu::dot_lanes_of_thread(L);
    const int64_t r0 = ds4::gpu::group_row_in(ln, R, block);
    const int c_first = (int)ds4_block_y() * NC;
    const int nc = ncols - c_first < NC ? ncols - c_first : NC;
    const int64_t g = r0 < n_rows ? r0 / x_group_rows : 0;
    const int8_t* xq[NC];
    const float* xd[NC];
    for (int c = 0; c < NC; ++c) {  // a column past the call's repeats the first; its sums are dropped
        const int64_t k = (int64_t)(c_first + (c < nc ? c : 0)) * x_groups + g;
        xq[c] = q + k * n;
        xd[c] = d + k * (n / ds4::gpu::kInt8Block);
    }
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = W + (uint64_t)(r0 + r < n_rows ? r0 + r : n_rows - 1) * row_bytes;
    float acc[R * NC], out[R * NC];
    for (int k = 0; k < R * NC; ++k) acc[k] = 0.0f;
    if (r0 < n_rows) ds4::gpu::segment_group_dot_q8_0<R, NC>(rows, n, ln, wide != 0, xq, xd, acc);
    ds4::gpu::segment_fold<R * NC>(acc, ln, part, out);
    if (ln.lane == 0) {
        for (int r = 0; r < R; ++r) {  // constant bounds: out stays in registers
            for (int c = 0; c < NC; ++c) {
                if (r0 + r < n_rows && c < nc) Y[(int64_t)(c_first + c) * ldy + r0 + r] = out[r * NC + c];
            }
        }
    }
}

template <int NC, int R>
__global__ void DS4_DOT_BOUNDS ds4_matmul_int8_kernel(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows,
                                                      const int8_t* q, const float* d, int ncols, float* Y,
                                                      int64_t ldy, int L, int wide, int64_t x_group_rows,
                                                      int64_t x_groups) {
    ds4_kernel_entry();
    __shared__ float part[R * NC * ds4::gpu::kDotBlock];
    matmul_int8_block<NC, R>(W, row_bytes, n, n_rows, q, d, ncols, Y, ldy, L, wide, x_group_rows, x_groups,
                             ds4_block_x(), part);
}

// ds4_matmul_set_kernel on int8 columns: matrix i takes the blocks from its first_block, each
// computed as ds4_matmul_int8_kernel computes it for that matrix alone (its L in part[i].L).
template <int NC>
__global__ void DS4_DOT_BOUNDS ds4_matmul_set_int8_kernel(MatmulSetArgs a, int64_t n, const int8_t* q, const float* d,
                                                          int ncols) {
    ds4_kernel_entry();
    __shared__ float part[NC * ds4::gpu::kDotBlock];
    const unsigned b = ds4_block_x();
    const MatmulSetPart m = set_part_of(a, b);
    matmul_int8_block<NC, 1>(m.W, m.row_bytes, n, m.n_rows, q, d, ncols, m.Y, m.ldy, m.L, m.wide, m.n_rows, 1,
                             b - m.first_block, part);
}

#define DS4_MATMUL_INT8(NC, R)                                                                                   \
    template __global__ void ds4_matmul_int8_kernel<NC, R>(const uint8_t*, uint64_t, int64_t, int64_t,            \
                                                           const int8_t*, const float*, int, float*, int64_t, int, \
                                                           int, int64_t, int64_t);
#define DS4_MATMUL_INT8_NC(NC) DS4_MATMUL_INT8(NC, 1) DS4_MATMUL_INT8(NC, ds4::gpu::max_group_rows<NC>())
#define DS4_MATMUL_SET_INT8(NC) \
    template __global__ void ds4_matmul_set_int8_kernel<NC>(MatmulSetArgs, int64_t, const int8_t*, const float*, int);
DS4_MATMUL_INT8_NC(1)
DS4_MATMUL_INT8_NC(2)
DS4_MATMUL_INT8_NC(4)
DS4_MATMUL_INT8_NC(8)
DS4_MATMUL_INT8(ds4::gpu::kWideCols, ds4::gpu::kWideRows)
DS4_MATMUL_SET_INT8(1)
DS4_MATMUL_SET_INT8(2)
DS4_MATMUL_SET_INT8(4)
DS4_MATMUL_SET_INT8(8)
static_assert(ds4::gpu::kNarrowCols == 8, "the instances above are for column batches of 1, 2, 4 and 8");

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {

using Int8Kernel = void (*)(const uint8_t*, uint64_t, int64_t, int64_t, const int8_t*, const float*, int, float*,
                            int64_t, int, int, int64_t, int64_t);
using Int8SetKernel = void (*)(MatmulSetArgs, int64_t, const int8_t*, const float*, int);

// The kernel of a call's shape (matmul_shape: the float kernels' choice).
Int8Kernel int8_kernel_of(const MatmulShape& s) {
    if (s.wide) return ds4_matmul_int8_kernel<kWideCols, kWideRows>;
    const bool one = s.R == 1;
    switch (s.NC) {
        case 1: return one ? ds4_matmul_int8_kernel<1, 1> : ds4_matmul_int8_kernel<1, max_group_rows<1>()>;
        case 2: return one ? ds4_matmul_int8_kernel<2, 1> : ds4_matmul_int8_kernel<2, max_group_rows<2>()>;
        case 4: return one ? ds4_matmul_int8_kernel<4, 1> : ds4_matmul_int8_kernel<4, max_group_rows<4>()>;
        default: return one ? ds4_matmul_int8_kernel<8, 1> : ds4_matmul_int8_kernel<8, max_group_rows<8>()>;
    }
}
Int8SetKernel int8_set_kernel_of(int NC) {
    return NC == 1 ? ds4_matmul_set_int8_kernel<1>
           : NC == 2 ? ds4_matmul_set_int8_kernel<2>
           : NC == 4 ? ds4_matmul_set_int8_kernel<4>
                     : ds4_matmul_set_int8_kernel<8>;
}

// Segments (lanes) per row, from the matrix's shape alone: four blocks a segment (a GEMM's
// k-tile of 128 values), up to a block's 256 threads. A warp of lanes then reads a row's codes in
// one sweep, as the float kernels' 32+ lanes a row do (dot_lanes). The first rule (lanes doubled
// until rows x lanes reached 128K threads, with row groups of 4) gave the head 2 lanes of 64
// blocks and 253 blocks of threads: decode at 2.92 ms against 1.97 on floats (H200, run 23).
int int8_q8_lanes(int64_t rows, int64_t n_in) {
    (void)rows;  // dot_lanes' signature, which matmul_set_args takes; this rule needs n_in only
    const int64_t nb = n_in / kInt8Block;
    int L = 1;
    while (L < kDotBlock && nb / (2 * L) >= 4) L *= 2;
    return L;
}

void launch_int8_with(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, int64_t tensor_rows,
                      const Int8Cols& x, int ncols, float* Y, int64_t ldy, int64_t x_group_rows, int64_t x_groups,
                      void* s) {
    const int L = int8_q8_lanes(tensor_rows, n_in);
    if (gemm_int8_for(ncols, L, x_group_rows, x_groups)) {  // a prefill block: the GEMM, the same bits
        launch_gemm_int8(W, row_bytes, n_in, n_rows, L, x, ncols, Y, ldy, x_group_rows, x_groups, s);
        return;
    }
    MatmulShape sh = matmul_shape(n_rows, tensor_rows, L, ncols, x_group_rows);
    // No row groups: with groups of 4 rows a thread the head ran on 253 blocks (run 23). Rows a
    // thread do not change a row's walk. Decode gained (2.92 -> 2.63 ms) but verify of 8 columns
    // lost (6.72 -> 8.28 ms, the lanes rule changed too): groups for ncols > 1 are still to try.
    if (!sh.wide) sh.R = 1, sh.NC = narrow_cols_for(ncols);  // the float rule's 2-row one-column calls: one column
    const dim3 g(dot_row_blocks(n_rows, L, sh.R), (unsigned)((ncols + sh.NC - 1) / sh.NC));
    ds4_launch(int8_kernel_of(sh), g, dim3(kDotBlock), s, W, row_bytes, n_in, n_rows, x.q, x.d, ncols, Y, ldy, L,
               dot_wide_at(8, W, row_bytes), x_group_rows, x_groups);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_int8_kernel");
}

void launch_int8_set(const MatmulSetJob* const* jobs, int n_jobs, int64_t n_in, const Int8Cols& x, int ncols,
                     void* s) {
    const MatmulSetArgs a = matmul_set_args(jobs, n_jobs, n_in, 8, int8_q8_lanes);
    const int NC = narrow_cols_for(ncols);
    ds4_launch(int8_set_kernel_of(NC), dim3(a.blocks, (unsigned)((ncols + NC - 1) / NC)), dim3(kDotBlock), s, a, n_in,
               x.q, x.d, ncols);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_set_int8_kernel");
}

}  // namespace

bool int8_matmul_for(uint32_t type, int64_t n_in) {
    constexpr uint32_t kQ8_0 = 8;
    return type == kQ8_0 && n_in > 0 && n_in % kInt8Block == 0 && int8_scope() == Int8Scope::kAll;
}

int64_t int8_matmul_scratch_bytes(int ncols, int64_t x_groups, int64_t n_in) {
    return int8_columns_bytes((int64_t)ncols * x_groups * n_in);
}

void launch_matmul_int8(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, int64_t tensor_rows,
                        const float* X, int64_t ldx, int ncols, float* Y, int64_t ldy, uint8_t* scratch, void* stream,
                        int64_t x_group_rows, int64_t x_groups, int64_t x_group_stride) {
    if (n_rows <= 0 || ncols <= 0) return;
    if (x_group_rows <= 0) x_group_rows = n_rows, x_groups = 1, x_group_stride = 0;  // one x for every row
    if (n_rows > 0x7fffffff || ncols / kNarrowCols > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": matmul of " + std::to_string(n_rows) + " rows x " + std::to_string(ncols) +
                            " columns exceeds the launch grid");
    }
    const Int8Cols x = launch_int8_columns(X, ldx, ncols, x_groups, x_group_stride, n_in, scratch, stream);
    launch_int8_with(W, row_bytes, n_in, n_rows, tensor_rows, x, ncols, Y, ldy, x_group_rows, x_groups, stream);
}

void launch_matmul_set_int8(const MatmulSetJob* jobs, int n_jobs, int64_t n_in, const float* X, int64_t ldx, int ncols,
                            uint8_t* scratch, void* stream) {
    if (ncols <= 0 || n_jobs <= 0) return;
    const Int8Cols x = launch_int8_columns(X, ldx, ncols, 1, 0, n_in, scratch, stream);
    for_each_matmul_set(
        jobs, n_jobs, ncols,
        [&](const MatmulSetJob& j) {
            launch_int8_with(j.W, j.row_bytes, n_in, j.n_rows, j.n_rows, x, ncols, j.Y, j.ldy, j.n_rows, 1, stream);
        },
        [&](const MatmulSetJob* const* set, int m) { launch_int8_set(set, m, n_in, x, ncols, stream); });
}

}  // namespace gpu
}  // namespace ds4
#endif
