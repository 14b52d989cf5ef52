// Matmul (GEMV-style) kernels for every weight type the engine computes with, one source
// for CUDA and HIP. A block of kDotBlock threads computes kDotBlock / L groups of R rows
// (groups of L lanes, gpu_dot.h) for a batch of up to NC columns; the reduction is gpu_dot.h's
// group_dot, so every column is bitwise what ncols = 1 gives (backend_compare checks it on
// every run), and L comes from the tensor's shape, not the call's.
// Accumulation is float (the CPU backend accumulates in double): the normalised error
// against the CPU is a few float ulps times the chain length (n_in / (8 L) chunks plus
// log2 L tree levels).
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

// Blocks (b, g): matmul_block b of the matrix.
template <int NC, int R, uint32_t TYPE>
__global__ void DS4_DOT_BOUNDS ds4_matmul_kernel(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows, const float* X,
                                  int64_t ldx, int ncols, float* Y, int64_t ldy, const uint64_t* grid, int L, int wide,
                                  int x4, int64_t x_group_rows, int64_t x_group_stride) {
    ds4_kernel_entry();
    __shared__ float part[R * NC * ds4::gpu::kDotBlock];
    matmul_block<NC, R, TYPE>(W, row_bytes, n, n_rows, X, ldx, ncols, Y, ldy, grid, L, wide, x4, x_group_rows,
                              x_group_stride, ds4_block_x(), part);
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
};

template <int NC, uint32_t TYPE>
__global__ void DS4_DOT_BOUNDS ds4_matmul_set_kernel(MatmulSetArgs a, int64_t n, const float* X, int64_t ldx,
                                                     int ncols, const uint64_t* grid, int x4) {
    ds4_kernel_entry();
    __shared__ float part[NC * ds4::gpu::kDotBlock];
    const unsigned b = ds4_block_x();
    MatmulSetPart q = a.part[0];
#pragma unroll
    for (int i = 1; i < kMatmulSetParts; ++i) {  // constant indices: the parameters stay in their bank
        if (i < a.n_parts && b >= a.part[i].first_block) q = a.part[i];
    }
    matmul_block<NC, 1, TYPE>(q.W, q.row_bytes, n, q.n_rows, X, ldx, ncols, q.Y, q.ldy, grid, q.L, q.wide, x4,
                              q.n_rows, 0, b - q.first_block, part);
}

// Every instantiation the launcher uses, spelled out so a device-only compile (which never
// sees the host launcher) still emits each kernel.
#define DS4_MATMUL_SIG(NC, R, T)                                                                                   \
    template __global__ void ds4_matmul_kernel<NC, R, T>(const uint8_t*, uint64_t, int64_t, int64_t, const float*,    \
                                                         int64_t, int, float*, int64_t, const uint64_t*, int, int, int, \
                                                         int64_t, int64_t);
#define DS4_MATMUL_NC(NC, T) DS4_MATMUL_SIG(NC, 1, T) DS4_MATMUL_SIG(NC, max_group_rows<NC>(), T)
#define DS4_MATMUL_SET_SIG(NC, T)                                                                             \
    template __global__ void ds4_matmul_set_kernel<NC, T>(MatmulSetArgs, int64_t, const float*, int64_t, int,     \
                                                          const uint64_t*, int);
#define DS4_MATMUL_INSTANCES(T)                                                                                     \
    DS4_MATMUL_NC(1, T) DS4_MATMUL_NC(2, T) DS4_MATMUL_NC(4, T) DS4_MATMUL_NC(8, T) DS4_MATMUL_SIG(kWideCols, kWideRows, T) \
    DS4_MATMUL_SET_SIG(1, T) DS4_MATMUL_SET_SIG(2, T) DS4_MATMUL_SET_SIG(4, T) DS4_MATMUL_SET_SIG(8, T)
using ds4::gpu::kWideCols;
using ds4::gpu::kWideRows;
using ds4::gpu::max_group_rows;
DS4_GPU_FOR_EACH_TYPE(DS4_MATMUL_INSTANCES)
static_assert(kCols == 8, "DS4_MATMUL_INSTANCES lists NC = 1, 2, 4, kCols");

#if DS4_GPU_HOST_CODE
#include <string>
#include <vector>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {

using MatmulKernel = void (*)(const uint8_t*, uint64_t, int64_t, int64_t, const float*, int64_t, int, float*, int64_t,
                             const uint64_t*, int, int, int, int64_t, int64_t);

// The kernel for NC columns with R = 1 or max_group_rows<NC>() rows per group.
template <int NC, uint32_t T>
MatmulKernel kernel_for(bool many, int* R) {
    *R = many ? max_group_rows<NC>() : 1;
    return many ? ds4_matmul_kernel<NC, max_group_rows<NC>(), T> : ds4_matmul_kernel<NC, 1, T>;
}

// Whether a call of more than kCols columns (a prefill block) runs kWideCols columns by
// kWideRows rows per group: each column chunk a lane loads then serves kWideRows rows (the L1
// traffic for x, not the weights' bytes, bounds these calls), with 16 sums a lane where 8
// columns by 4 rows spilled. Taken where those groups still give a wave of blocks. Columns
// and rows per group change no bit, so the rule may look at the call.
// DS4KIT_GPU_WIDE_ROWS=auto|always|never overrides it (always: every such call, as tests/gpu
// does on models too small for the rule; never: to measure what it buys).
bool wide_rows_for(int64_t n_rows, int L, int ncols, int64_t x_group_rows) {
    if (ncols <= kCols || (x_group_rows != n_rows && x_group_rows % kWideRows != 0)) return false;
    switch (env_choice("DS4KIT_GPU_WIDE_ROWS", {"auto", "always", "never"})) {
        case 1: return true;
        case 2: return false;
        default: {
            constexpr int64_t kWave = 128;  // blocks: about one per multiprocessor of a large GPU
            return (int64_t)dot_row_blocks(n_rows, L, kWideRows) * ((ncols + kWideCols - 1) / kWideCols) >= kWave;
        }
    }
}

template <uint32_t T>
void launch_type(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows, int64_t tensor_rows, const float* X,
                 int64_t ldx, int ncols, float* Y, int64_t ldy, const uint64_t* grid, int64_t x_group_rows,
                 int64_t x_group_stride, void* s) {
    const int L = dot_lanes(tensor_rows, n);
    int NC = ncols <= 2 ? ncols : ncols <= 4 ? 4 : kCols;  // 1, 2, 4 or 8: the narrowest that holds ncols
    // A group of R rows reads one x group, so R must divide a grouped call's x groups.
    const int R_many = NC == 1 ? max_group_rows<1>() : max_group_rows<kCols>();
    const bool many = row_groups_for(tensor_rows) && (x_group_rows == n_rows || x_group_rows % R_many == 0);
    const int wide = dot_wide<T>(W, row_bytes);
    const int x4 = dot_x_aligned(X, ldx) && dot_x_aligned(X, x_group_stride);
    int R = 1;
    MatmulKernel k = NC == 1 ? kernel_for<1, T>(many, &R) : NC == 2 ? kernel_for<2, T>(many, &R)
                   : NC == 4 ? kernel_for<4, T>(many, &R) : kernel_for<8, T>(many, &R);
    if (wide_rows_for(n_rows, L, ncols, x_group_rows)) {
        k = ds4_matmul_kernel<kWideCols, kWideRows, T>, NC = kWideCols, R = kWideRows;
    }
    const dim3 g(dot_row_blocks(n_rows, L, R), (unsigned)((ncols + NC - 1) / NC));
    ds4_launch(k, g, dim3(kDotBlock), s, W, row_bytes, n, n_rows, X, ldx, ncols, Y, ldy, grid, L, wide, x4,
               x_group_rows, x_group_stride);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_kernel");
}

template <uint32_t T>
void launch_set_type(const MatmulSetJob* const* jobs, int n_jobs, int64_t n, const float* X, int64_t ldx, int ncols,
                     const uint64_t* grid, void* s) {
    MatmulSetArgs a{};
    a.n_parts = n_jobs;
    int64_t blocks = 0;
    for (int i = 0; i < n_jobs; ++i) {
        const MatmulSetJob& j = *jobs[i];
        const int L = dot_lanes(j.tensor_rows, n);
        a.part[i] = MatmulSetPart{j.W, j.row_bytes, j.n_rows, j.Y, j.ldy, L, dot_wide<T>(j.W, j.row_bytes),
                                  (unsigned)blocks};
        blocks += dot_row_blocks(j.n_rows, L, 1);
    }
    if (blocks > 0x7fffffff) throw ArgumentError(DS4_GPU_WHO ": matmul set of " + std::to_string(blocks) + " blocks exceeds the launch grid");
    const int NC = ncols <= 2 ? ncols : ncols <= 4 ? 4 : kCols;
    const int x4 = dot_x_aligned(X, ldx);
    using SetKernel = void (*)(MatmulSetArgs, int64_t, const float*, int64_t, int, const uint64_t*, int);
    const SetKernel k = NC == 1 ? ds4_matmul_set_kernel<1, T> : NC == 2 ? ds4_matmul_set_kernel<2, T>
                      : NC == 4 ? ds4_matmul_set_kernel<4, T> : ds4_matmul_set_kernel<kCols, T>;
    ds4_launch(k, dim3((unsigned)blocks, (unsigned)((ncols + NC - 1) / NC)), dim3(kDotBlock), s, a, n, X, ldx, ncols,
               grid, x4);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_set_kernel");
}

// Whether a matrix may share a set launch: calls of up to kCols columns of one-row groups (the
// attention input's projections in decode and verify); prefill's wide calls launch alone.
bool set_member(const MatmulSetJob& j, int ncols) {
    return ncols <= kCols && j.n_rows > 0 && !row_groups_for(j.tensor_rows);
}

}  // namespace

void launch_matmul_set(const MatmulSetJob* jobs, int n_jobs, int64_t n_in, const float* X, int64_t ldx, int ncols,
                       const uint64_t* grid, void* stream) {
    if (ncols <= 0 || n_jobs <= 0) return;
    // DS4KIT_GPU_MATMUL_SETS=never: a launch per matrix (to measure what the sets buy).
    const bool sets = env_choice("DS4KIT_GPU_MATMUL_SETS", {"auto", "never"}) == 0;
    std::vector<char> done((size_t)n_jobs, 0);
    for (int i = 0; i < n_jobs; ++i) {
        if (done[i]) continue;
        const MatmulSetJob* set[kMatmulSetParts];
        int m = 0;
        if (sets && set_member(jobs[i], ncols)) {
            for (int j = i; j < n_jobs && m < kMatmulSetParts; ++j) {
                if (!done[j] && jobs[j].type == jobs[i].type && set_member(jobs[j], ncols)) set[m++] = &jobs[j], done[j] = 1;
            }
        }
        if (m <= 1) {
            done[i] = 1;
            const MatmulSetJob& j = jobs[i];
            launch_matmul(j.type, j.W, j.row_bytes, n_in, j.n_rows, j.tensor_rows, X, ldx, ncols, j.Y, j.ldy, grid,
                          stream);
            continue;
        }
        switch (jobs[i].type) {
#define DS4_CASE(T) \
    case T: launch_set_type<T>(set, m, n_in, X, ldx, ncols, grid, stream); break;
            DS4_GPU_FOR_EACH_TYPE(DS4_CASE)
#undef DS4_CASE
            default:
                throw UnsupportedError(DS4_GPU_WHO ": matmul has no kernel for ggml type " + std::to_string(jobs[i].type));
        }
    }
}

bool row_groups_for(int64_t rows) {
    const int mode = env_choice("DS4KIT_GPU_ROW_GROUPS", {"auto", "always", "never"});
    return mode == 0 ? rows >= 8192 : mode == 1;
}

int dot_lanes(int64_t rows, int64_t n_in) {
    // About 256 blocks' worth of rows (at least 32 lanes a row), but at least four chunks of 8
    // for every lane. Fewer lanes give each more chunks in flight and a shorter final tree; on
    // the H200 decode went from 279 tok/s (2048 blocks' worth) to 292 (512) and 295 (256), and
    // prefill from 752 to 820 tok/s (2026-12-01, reports/examples/gpu-speed-h200 run 10).
    int L = 32;
    while (L < kDotBlock && (int64_t)L * rows < (int64_t)kDotBlock * 256) L *= 2;
    while (L > 32 && (int64_t)L * 4 * kChunk > n_in) L /= 2;
    return L;
}

bool matmul_type_supported(uint32_t type) {
    switch (type) {
#define DS4_CASE(T) case T:
        DS4_GPU_FOR_EACH_TYPE(DS4_CASE)
#undef DS4_CASE
        return true;
        default: return false;
    }
}

void launch_matmul(uint32_t type, const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows,
                   int64_t tensor_rows, const float* X, int64_t ldx, int ncols, float* Y, int64_t ldy,
                   const uint64_t* grid, void* stream, int64_t x_group_rows, int64_t x_group_stride) {
    if (n_rows <= 0 || ncols <= 0) return;
    if (x_group_rows <= 0) x_group_rows = n_rows, x_group_stride = 0;  // one x for every row
    if (n_rows > 0x7fffffff || ncols / kCols > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": matmul of " + std::to_string(n_rows) + " rows x " +
                            std::to_string(ncols) + " columns exceeds the launch grid");
    }
    switch (type) {
#define DS4_CASE(T) \
    case T:                                                                                                        \
        launch_type<T>(W, row_bytes, n_in, n_rows, tensor_rows, X, ldx, ncols, Y, ldy, grid, x_group_rows,         \
                       x_group_stride, stream);                                                                    \
        return;
        DS4_GPU_FOR_EACH_TYPE(DS4_CASE)
#undef DS4_CASE
        default:
            throw UnsupportedError(DS4_GPU_WHO ": matmul has no kernel for ggml type " + std::to_string(type));
    }
}

}  // namespace gpu
}  // namespace ds4
#endif
