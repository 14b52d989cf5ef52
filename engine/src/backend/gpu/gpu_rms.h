// The arithmetic of the GPU backend's RMS norm, shared by rms_norm (gpu_norm.cu) and the
// hyper-connection collapse that normalises what it collapses (gpu_hc.cu), so the fused kernel
// gives the standalone one's bits: a block of kNormThreads threads per row; thread t adds x[i]^2
// for i = t, t + kNormThreads, ... in double (each float square is exact in double), the
// partial sums are added in gpu_tree.h's fixed tree, and y = x * s * w is formed in double with
// s = 1 / sqrt(ss / n + eps), as the CPU backend does. Only the order of the (exact-product)
// double sum differs from the CPU's.
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_tree.h"
#include "core/numerics.h"

namespace ds4 {
namespace gpu {

// Threads of a norm block: a multiple of every wave size (32, 64); a decode step normalises
// single rows of up to 16K values, and a small block left them waiting on one load after another.
constexpr int kNormThreads = 512;

}  // namespace gpu
}  // namespace ds4

// A kernel of kNormThreads threads that keeps a row in registers (hc_collapse_norm): the cap
// makes the compiler fit a 512-thread block in an NVIDIA multiprocessor's 64K registers (128 a
// thread; ptxas gave it 126 without the cap, one allocation step from a launch failure).
#if defined(__CUDACC__) && !defined(__clang__)
#define DS4_NORM_BOUNDS __launch_bounds__(512)
#elif defined(__HIP_CPU_RT__)
#define DS4_NORM_BOUNDS
#else
#define DS4_NORM_BOUNDS __attribute__((amdgpu_flat_work_group_size(1, 512)))
#endif

namespace ds4 {
namespace gpu {
static_assert(kNormThreads == 512, "DS4_NORM_BOUNDS is written for blocks of 512");

// A thread's running sum of squares after one more value.
__device__ inline double rms_add_square(double ss, float v) { return ss + (double)v * (double)v; }

// The row's scale 1 / sqrt(sum / n + eps) from every thread's partial sum ss (thread t of the
// block's kNormThreads), returned to every thread. part: kNormThreads doubles of shared memory,
// slot: one shared double. Every thread calls it.
__device__ inline double rms_block_scale(double ss, int t, int64_t n, double eps, double* part, double* slot) {
    part[t] = ss;
    tree_reduce<1>(part, 0, 0, t, kNormThreads);
    if (t == 0) *slot = 1.0 / ds4::num::sqrt_f64(part[0] / (double)n + eps);
    ds4_sync_block();
    return *slot;
}

// One normalised value: x * s * w in double, rounded once to float.
__device__ inline float rms_scaled(float x, double s, double w) { return (float)((double)x * s * w); }

}  // namespace gpu
}  // namespace ds4
