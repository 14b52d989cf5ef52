// RMS norm, scale and add kernels, one source for CUDA and HIP.
//
// rms_norm: one thread block of kNormThreads per row, the arithmetic of gpu_rms.h (a row's
// result does not depend on how many rows are normalised together). Given q, it also writes
// the row's int8 column (gpu_int8.h int8_held_row: what the quantiser would write of y), for a
// Q8_0 matmul on int8 columns that reads y next (GpuBackend::norm_feeds).
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_int8.h"
#include "backend/gpu/gpu_rms.h"

#include <stdint.h>

namespace {
using ds4::gpu::kInt8Block;
using ds4::gpu::kNormThreads;
constexpr int kScaleThreads = 256;
constexpr int kNormHeld = 8;  // values a thread holds in registers: rows of up to 4096 (the model's width)
}  // namespace

// q, d (with rows of at most kNormThreads x kNormHeld values, a multiple of 32): row r's int8
// column at q + r n, its scales at d + r n / 32.
extern "C" __global__ void ds4_rms_norm_kernel(const float* x, const float* w, int64_t n, double eps, float* y,
                                               int8_t* q, float* d) {
    ds4_kernel_entry();
    __shared__ double part[kNormThreads];
    __shared__ double scale;
    const int t = (int)ds4_thread_x();
    const int64_t r = ds4_block_x();
    const float* xr = x + r * n;
    float* yr = y + r * n;
    if (n <= (int64_t)kNormThreads * kNormHeld) {
        // The row's values and the weights in registers, every load issued at once: one round
        // trip to memory where the loop below takes four (a decode step's norms of 4096 values
        // had taken 7 us, most of it waiting on loads in turn). Same sums, same order.
        float xv[kNormHeld], wv[kNormHeld];
#pragma unroll
        for (int k = 0; k < kNormHeld; ++k) {
            const int64_t i = t + (int64_t)k * kNormThreads;
            xv[k] = i < n ? xr[i] : 0.0f;
            wv[k] = w && i < n ? w[i] : 1.0f;
        }
        double ss = 0.0;
#pragma unroll
        for (int k = 0; k < kNormHeld; ++k) {
            if (t + (int64_t)k * kNormThreads < n) ss = ds4::gpu::rms_add_square(ss, xv[k]);
        }
        const double s = ds4::gpu::rms_block_scale(ss, t, n, eps, part, &scale);
#pragma unroll
        for (int k = 0; k < kNormHeld; ++k) {
            const int64_t i = t + (int64_t)k * kNormThreads;
            xv[k] = ds4::gpu::rms_scaled(xv[k], s, (double)wv[k]);
            if (i < n) yr[i] = xv[k];
        }
        if (q) {
            __shared__ float amax[kNormHeld * kNormThreads / ds4::gpu::kInt8Block];
#if DS4_GPU_SHUFFLE32
            float* mag = nullptr;
#else
            __shared__ float mag[kNormHeld * kNormThreads];
#endif
            ds4::gpu::int8_held_row<kNormHeld>(xv, t, kNormThreads, n, q + r * n, d + r * (n / ds4::gpu::kInt8Block),
                                               amax, mag);
        }
        return;
    }
    double ss = 0.0;
#pragma unroll 4
    for (int64_t i = t; i < n; i += kNormThreads) ss = ds4::gpu::rms_add_square(ss, xr[i]);  // loads ahead of the adds
    const double s = ds4::gpu::rms_block_scale(ss, t, n, eps, part, &scale);
#pragma unroll 4
    for (int64_t i = t; i < n; i += kNormThreads) yr[i] = ds4::gpu::rms_scaled(xr[i], s, w ? (double)w[i] : 1.0);
}

extern "C" __global__ void ds4_scale_kernel(float* x, int64_t n, double s) {
    ds4_kernel_entry();
    const int64_t i = (int64_t)ds4_block_x() * kScaleThreads + ds4_thread_x();
    if (i < n) x[i] = (float)((double)x[i] * s);
}

extern "C" __global__ void ds4_add_kernel(float* y, const float* x, int64_t n) {
    ds4_kernel_entry();
    const int64_t i = (int64_t)ds4_block_x() * kScaleThreads + ds4_thread_x();
    if (i < n) y[i] = y[i] + x[i];
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

bool rms_norm_int8_fits(int64_t n) { return n > 0 && n <= (int64_t)kNormThreads * kNormHeld && n % kInt8Block == 0; }

bool rms_norm_int8_on() { return env_choice("DS4KIT_GPU_NORM_INT8", {"auto", "never"}) == 0; }

void launch_rms_norm(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y, void* stream,
                     const Int8ColsOut* int8) {
    if (n_rows <= 0 || n <= 0) return;
    if (n_rows > 0x7fffffff) {
        throw ArgumentError(DS4_GPU_WHO ": rms_norm of " + std::to_string(n_rows) +
                            " rows exceeds the launch grid");
    }
    if (int8 && !rms_norm_int8_fits(n)) {
        throw ArgumentError(DS4_GPU_WHO ": rms_norm with int8 columns: rows of " + std::to_string(n) +
                            " values (need a multiple of 32, at most " + std::to_string(kNormThreads * kNormHeld) + ")");
    }
    ds4_launch(ds4_rms_norm_kernel, dim3((unsigned)n_rows), dim3(kNormThreads), stream, x, w, n, eps, y,
               int8 ? int8->q : nullptr, int8 ? int8->d : nullptr);
    DS4_GPU_CHECK_LAUNCH("ds4_rms_norm_kernel");
}

void launch_scale(float* x, int64_t n, double s, void* stream) {
    if (n <= 0) return;
    const int64_t blocks = (n + kScaleThreads - 1) / kScaleThreads;
    if (blocks > 0x7fffffff) {
        throw ArgumentError(DS4_GPU_WHO ": scale of " + std::to_string(n) +
                            " values exceeds the launch grid");
    }
    ds4_launch(ds4_scale_kernel, dim3((unsigned)blocks), dim3(kScaleThreads), stream, x, n, s);
    DS4_GPU_CHECK_LAUNCH("ds4_scale_kernel");
}

void launch_add(float* y, const float* x, int64_t n, void* stream) {
    if (n <= 0) return;
    const int64_t blocks = (n + kScaleThreads - 1) / kScaleThreads;
    if (blocks > 0x7fffffff) {
        throw ArgumentError(DS4_GPU_WHO ": add of " + std::to_string(n) + " values exceeds the launch grid");
    }
    ds4_launch(ds4_add_kernel, dim3((unsigned)blocks), dim3(kScaleThreads), stream, y, x, n);
    DS4_GPU_CHECK_LAUNCH("ds4_add_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
