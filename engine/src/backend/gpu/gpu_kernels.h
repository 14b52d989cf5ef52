// Host launchers of the GPU backend's kernels, in plain C++ types (the stream is the
// runtime's stream handle as void*). Each enqueues on the stream and throws a ds4 error
// naming the kernel if the launch fails; arguments are checked by the caller
// (GpuBackend), which knows the tensor names. Pointers are device addresses.
#pragma once
#include <cstdint>

namespace ds4 {
namespace gpu {

// The weight row formats the matmul kernels read (ggml layouts).
enum class RowFormat { F32, F16, Q8_0 };

// Y[c * ldy + r] = W_row(r) . X[c * ldx .. + n_in) for r < n_rows, c < ncols, where row r
// starts at W + r * row_bytes. Float accumulation; every column is reduced exactly as it
// would be with ncols = 1 (gpu_matmul.cu says how).
void launch_matmul(RowFormat fmt, const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, const float* X,
                   int64_t ldx, int ncols, float* Y, int64_t ldy, void* stream);

// y_r = x_r / sqrt(mean(x_r^2) + eps) * w (w == nullptr: unweighted) for n_rows rows of n;
// the sum of squares in double, in a fixed order. y may equal x.
void launch_rms_norm(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y, void* stream);

// x[k] = (float)(x[k] * s) for k < n (the product in double, as the CPU backend).
void launch_scale(float* x, int64_t n, double s, void* stream);

}  // namespace gpu
}  // namespace ds4
