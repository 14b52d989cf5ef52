// Q8_0 matmuls on int8 columns (DS4KIT_GPU_INT8=all; gpu_kernels.h int8_matmul_for): the
// attention's projections, the head and every other Q8_0 matrix. A Q8_0 block's 32 codes times
// the column's 32 int8 values are an exact integer (eight dp4a), so the float work per weight
// falls to a sixteenth of an fma, where the float walk (gpu_dot.h) converts and multiplies each
// code, and a column is a byte a value where the float walk reads four. The walk is gpu_int8.h's
// chain_dot_q8_0_int8 (a row in 8 chains of blocks k, k + 8, ..., then a tree over the chains),
// the same for every column count and row group, so verify == decode == prefill holds (the
// prefill GEMM, gpu_gemm_int8.cu, keeps a chain a warp); the oracle is the float64 reference
// with int8 columns (tests/gpu/test_gpu_int8.py).
#include "backend/gpu/gpu_int8.h"
#include "backend/gpu/gpu_matmul_kernels.h"  // MatmulSetArgs, strided_grid

#include <stdint.h>

// matmul_block's work on int8 columns: R rows a group of kInt8RowLanes lanes, column batch block
// y of NC columns; column c's group g (rows g x_group_rows ..) is int8 column c x_groups + g.
// Every group walks (rows past the matrix repeat its last row, their sums dropped): the walk's
// shuffles need every lane.
template <int NC, int R>
__device__ inline void matmul_int8_block(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows,
                                         const int8_t* q, const float* d, int ncols, float* Y, int64_t ldy, int wide,
                                         int64_t x_group_rows, int64_t x_groups, unsigned block, float* part) {
    const ds4::gpu::Lanes ln = ds4::gpu::dot_lanes_of_thread(ds4::gpu::kInt8RowLanes);
    const int64_t r0 = ds4::gpu::group_row_in(ln, R, block);
    const int c_first = (int)ds4_block_y() * NC;
    const int nc = ncols - c_first < NC ? ncols - c_first : NC;
    const int64_t g = (r0 < n_rows ? r0 : n_rows - 1) / x_group_rows;
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
    ds4::gpu::chain_group_dot_q8_0<R, NC>(rows, n, ln.lane, wide != 0, xq, xd, acc);
    ds4::gpu::chain_reduce<R * NC>(acc, ln.lane, (int)ds4_thread_x(), part, out);
    if (ln.lane == 0) {
        for (int r = 0; r < R; ++r) {  // constant bounds: out stays in registers
            for (int c = 0; c < NC; ++c) {
                if (r0 + r < n_rows && c < nc) Y[(int64_t)(c_first + c) * ldy + r0 + r] = out[r * NC + c];
            }
        }
    }
}

// Blocks (b, g): row block b of the matrix, and on a strided grid (one column a pass, as the
// float kernels) b + the grid's x, ... (a block's row blocks are the same for all its lanes).
template <int NC, int R>
__global__ void DS4_DOT_BOUNDS ds4_matmul_int8_kernel(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows,
                                                      const int8_t* q, const float* d, int ncols, float* Y,
                                                      int64_t ldy, int wide, int64_t x_group_rows, int64_t x_groups) {
    ds4_kernel_entry();
    __shared__ float part[R * NC * ds4::gpu::kDotBlock];
    const unsigned blocks = ds4::gpu::dot_row_blocks(n_rows, ds4::gpu::kInt8RowLanes, R);
    const unsigned stride = strided_grid(NC) ? ds4_grid_dim_x() : blocks;
    for (unsigned b = ds4_block_x(); b < blocks; b += stride) {
        matmul_int8_block<NC, R>(W, row_bytes, n, n_rows, q, d, ncols, Y, ldy, wide, x_group_rows, x_groups, b, part);
    }
}

// ds4_matmul_set_kernel on int8 columns: matrix i takes the blocks from its first_block, each
// computed as ds4_matmul_int8_kernel computes it for that matrix alone.
template <int NC>
__global__ void DS4_DOT_BOUNDS ds4_matmul_set_int8_kernel(MatmulSetArgs a, int64_t n, const int8_t* q, const float* d,
                                                          int ncols) {
    ds4_kernel_entry();
    __shared__ float part[NC * ds4::gpu::kDotBlock];
    const unsigned b = ds4_block_x();
    const MatmulSetPart m = set_part_of(a, b);
    matmul_int8_block<NC, 1>(m.W, m.row_bytes, n, m.n_rows, q, d, ncols, m.Y, m.ldy, m.wide, m.n_rows, 1,
                             b - m.first_block, part);
}

#define DS4_MATMUL_INT8(NC, R)                                                                                   \
    template __global__ void ds4_matmul_int8_kernel<NC, R>(const uint8_t*, uint64_t, int64_t, int64_t,            \
                                                           const int8_t*, const float*, int, float*, int64_t, int, \
                                                           int64_t, int64_t);
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
                            int64_t, int, int64_t, int64_t);
using Int8SetKernel = void (*)(MatmulSetArgs, int64_t, const int8_t*, const float*, int);

// The kernel of a call's shape.
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

// Lanes a row: always a chain walk's kInt8RowLanes (matmul_set_args takes a rule of the shape).
int int8_row_lanes(int64_t, int64_t) { return kInt8RowLanes; }

// The shape: the float kernels' rule (matmul_shape: R-row groups from 8192 rows for one column,
// 4096 for more; wide 4 x 4 calls), except that a one-column call keeps one column (the float
// rule's 2-row groups for 4096-8191 rows run its 2-column kernel).
MatmulShape int8_shape(int64_t n_rows, int64_t tensor_rows, int ncols, int64_t x_group_rows) {
    MatmulShape sh = matmul_shape(n_rows, tensor_rows, kInt8RowLanes, ncols, x_group_rows);
    if (!sh.wide && sh.NC != narrow_cols_for(ncols)) sh.NC = narrow_cols_for(ncols), sh.R = 1;
    return sh;
}

void launch_int8_with(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, int64_t tensor_rows,
                      const Int8Cols& x, int ncols, float* Y, int64_t ldy, int64_t x_group_rows, int64_t x_groups,
                      void* s) {
    if (gemm_int8_for(ncols, x_group_rows, x_groups)) {  // a prefill block: the GEMM, the same bits
        launch_gemm_int8(W, row_bytes, n_in, n_rows, x, ncols, Y, ldy, x_group_rows, x_groups, s);
        return;
    }
    const MatmulShape sh = int8_shape(n_rows, tensor_rows, ncols, x_group_rows);
    const Int8Kernel k = int8_kernel_of(sh);
    const unsigned gy = (unsigned)((ncols + sh.NC - 1) / sh.NC);
    const unsigned gx = matmul_grid_x((const void*)k, sh.NC, dot_row_blocks(n_rows, kInt8RowLanes, sh.R), gy);
    ds4_launch(k, dim3(gx, gy), dim3(kDotBlock), s, W, row_bytes, n_in, n_rows, x.q, x.d, ncols, Y, ldy,
               dot_wide_at(kInt8LoadBytes, W, row_bytes), x_group_rows, x_groups);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_int8_kernel");
}

void launch_int8_set(const MatmulSetJob* const* jobs, int n_jobs, int64_t n_in, const Int8Cols& x, int ncols,
                     void* s) {
    const MatmulSetArgs a = matmul_set_args(jobs, n_jobs, n_in, kInt8LoadBytes, int8_row_lanes);
    const int NC = narrow_cols_for(ncols);
    ds4_launch(int8_set_kernel_of(NC), dim3(a.blocks, (unsigned)((ncols + NC - 1) / NC)), dim3(kDotBlock), s, a, n_in,
               x.q, x.d, ncols);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_set_int8_kernel");
}

// ArgumentError where a call's rows or column batches exceed a launch grid.
void check_int8_grid(int64_t n_rows, int ncols) {
    if (n_rows > 0x7fffffff || ncols / kNarrowCols > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": matmul of " + std::to_string(n_rows) + " rows x " + std::to_string(ncols) +
                            " columns exceeds the launch grid");
    }
}

}  // namespace

bool int8_matmul_for(uint32_t type, int64_t n_in) {
    constexpr uint32_t kQ8_0 = 8;
    return type == kQ8_0 && n_in > 0 && n_in % kInt8Block == 0 && int8_scope() == Int8Scope::kAll;
}

int64_t int8_matmul_scratch_bytes(int ncols, int64_t x_groups, int64_t n_in) {
    return int8_columns_bytes((int64_t)ncols * x_groups * n_in);
}

void launch_matmul_int8_on(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, int64_t tensor_rows,
                           const Int8Cols& x, int ncols, float* Y, int64_t ldy, void* stream) {
    if (n_rows <= 0 || ncols <= 0) return;
    check_int8_grid(n_rows, ncols);
    launch_int8_with(W, row_bytes, n_in, n_rows, tensor_rows, x, ncols, Y, ldy, n_rows, 1, stream);
}

void launch_matmul_int8(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, int64_t tensor_rows,
                        const float* X, int64_t ldx, int ncols, float* Y, int64_t ldy, uint8_t* scratch, void* stream,
                        int64_t x_group_rows, int64_t x_groups, int64_t x_group_stride) {
    if (n_rows <= 0 || ncols <= 0) return;
    if (x_group_rows <= 0) x_group_rows = n_rows, x_groups = 1, x_group_stride = 0;  // one x for every row
    check_int8_grid(n_rows, ncols);
    const Int8Cols x = launch_int8_columns(X, ldx, ncols, x_groups, x_group_stride, n_in, scratch, stream);
    launch_int8_with(W, row_bytes, n_in, n_rows, tensor_rows, x, ncols, Y, ldy, x_group_rows, x_groups, stream);
}

void launch_matmul_set_int8_on(const MatmulSetJob* jobs, int n_jobs, int64_t n_in, const Int8Cols& x, int ncols,
                               void* stream) {
    if (ncols <= 0 || n_jobs <= 0) return;
    for_each_matmul_set(
        jobs, n_jobs, ncols,
        [&](const MatmulSetJob& j) {
            launch_int8_with(j.W, j.row_bytes, n_in, j.n_rows, j.n_rows, x, ncols, j.Y, j.ldy, j.n_rows, 1, stream);
        },
        [&](const MatmulSetJob* const* set, int m) { launch_int8_set(set, m, n_in, x, ncols, stream); });
}

void launch_matmul_set_int8(const MatmulSetJob* jobs, int n_jobs, int64_t n_in, const float* X, int64_t ldx, int ncols,
                            uint8_t* scratch, void* stream) {
    if (ncols <= 0 || n_jobs <= 0) return;
    const Int8Cols x = launch_int8_columns(X, ldx, ncols, 1, 0, n_in, scratch, stream);
    launch_matmul_set_int8_on(jobs, n_jobs, n_in, x, ncols, stream);
}

}  // namespace gpu
}  // namespace ds4
#endif
