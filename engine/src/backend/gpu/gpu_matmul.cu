// Matmul (GEMV-style) kernels for every weight type the engine computes with, one source
// for CUDA and HIP. One thread block per output row and group of up to kCols columns;
// the reduction is gpu_dot.h's block_dot, so every column is bitwise what ncols = 1 gives
// (backend_compare checks it on every run).
// Accumulation is float (the CPU backend accumulates in double): the normalised error
// against the CPU is a few float ulps times the chain length (n_in / (8 T) chunks plus
// log2 T tree levels).
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_dot.h"

#include <stdint.h>

namespace {
constexpr int kCols = 4;  // columns per block (registers per thread)
}  // namespace

// Block (r, g): output row r for columns c0 + g * NC .. + NC.
template <int NC, uint32_t TYPE>
__global__ void ds4_matmul_kernel(const uint8_t* W, uint64_t row_bytes, int64_t n, const float* X, int64_t ldx,
                                  int c0, float* Y, int64_t ldy, const uint64_t* grid) {
    __shared__ float part[NC * ds4::gpu::kDotThreads];
    const int64_t r = ds4_block_x();
    const int c_first = c0 + (int)ds4_block_y() * NC;
    const float* x[NC];
    for (int c = 0; c < NC; ++c) x[c] = X + (int64_t)(c_first + c) * ldx;
    float out[NC];
    ds4::gpu::block_dot<NC, TYPE>(W + (uint64_t)r * row_bytes, n, x, grid, part, out);
    if (ds4_thread_x() == 0) {
        for (int c = 0; c < NC; ++c) Y[(int64_t)(c_first + c) * ldy + r] = out[c];
    }
}

// Every instantiation the launcher uses, spelled out so a device-only compile (which never
// sees the host launcher) still emits each kernel.
#define DS4_MATMUL_SIG(NC, T) \
    template __global__ void ds4_matmul_kernel<NC, T>(const uint8_t*, uint64_t, int64_t, const float*, int64_t, int, \
                                                      float*, int64_t, const uint64_t*);
#define DS4_MATMUL_INSTANCES(T) DS4_MATMUL_SIG(1, T) DS4_MATMUL_SIG(2, T) DS4_MATMUL_SIG(3, T) DS4_MATMUL_SIG(4, T)
DS4_GPU_FOR_EACH_TYPE(DS4_MATMUL_INSTANCES)
static_assert(kCols == 4, "DS4_MATMUL_INSTANCES lists NC = 1 .. kCols");

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {

template <uint32_t T>
void launch_group(int nc, unsigned groups, const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows,
                  const float* X, int64_t ldx, int c0, float* Y, int64_t ldy, const uint64_t* grid, void* s) {
    const dim3 g((unsigned)n_rows, groups);
    void (*k)(const uint8_t*, uint64_t, int64_t, const float*, int64_t, int, float*, int64_t, const uint64_t*) =
        nc == 1 ? ds4_matmul_kernel<1, T> : nc == 2 ? ds4_matmul_kernel<2, T>
        : nc == 3 ? ds4_matmul_kernel<3, T> : ds4_matmul_kernel<4, T>;
    ds4_launch(k, g, dim3(kDotThreads), s, W, row_bytes, n, X, ldx, c0, Y, ldy, grid);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_kernel");
}

template <uint32_t T>
void launch_type(const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows, const float* X, int64_t ldx,
                 int ncols, float* Y, int64_t ldy, const uint64_t* grid, void* s) {
    const int full = ncols / kCols, rest = ncols % kCols;
    if (full > 0) launch_group<T>(kCols, (unsigned)full, W, row_bytes, n, n_rows, X, ldx, 0, Y, ldy, grid, s);
    if (rest > 0) launch_group<T>(rest, 1, W, row_bytes, n, n_rows, X, ldx, full * kCols, Y, ldy, grid, s);
}

}  // namespace

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
                   const float* X, int64_t ldx, int ncols, float* Y, int64_t ldy, const uint64_t* grid,
                   void* stream) {
    if (n_rows <= 0 || ncols <= 0) return;
    if (n_rows > 0x7fffffff || ncols / kCols > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": matmul of " + std::to_string(n_rows) + " rows x " +
                            std::to_string(ncols) + " columns exceeds the launch grid");
    }
    switch (type) {
#define DS4_CASE(T) \
    case T: launch_type<T>(W, row_bytes, n_in, n_rows, X, ldx, ncols, Y, ldy, grid, stream); return;
        DS4_GPU_FOR_EACH_TYPE(DS4_CASE)
#undef DS4_CASE
        default:
            throw UnsupportedError(DS4_GPU_WHO ": matmul has no kernel for ggml type " + std::to_string(type));
    }
}

}  // namespace gpu
}  // namespace ds4
#endif
