// Int8 columns (gpu_int8.h): the one quantiser every int8 walk reads its columns from (the
// experts', gpu_moe_int8.cu, and the Q8_0 matmul's, gpu_matmul_int8.cu), and the switch that
// says which matrices take them (DS4KIT_GPU_INT8).
#include "backend/gpu/gpu_int8.h"

#include <stdint.h>

namespace {
constexpr int kQuantThreads = 256;  // a thread per value: 8 int8 blocks a block
static_assert(kQuantThreads % ds4::gpu::kInt8Block == 0, "whole int8 blocks a block");
}  // namespace

// Thread i: value e = i % n of column k = i / n (k = c G + g: group g of column c, at
// x + c ldx + g x_stride) into q[i], and d[i / 32] by its int8 block's first thread (n is a
// multiple of 32, so a block never straddles two columns). The block's amax is a max (no
// rounding: any order gives it), here a tree over shared memory.
extern "C" __global__ void ds4_int8_columns_kernel(const float* x, int64_t ldx, int64_t groups, int64_t x_stride,
                                                   int64_t n, int64_t values, int8_t* q, float* d) {
    ds4_kernel_entry();
    __shared__ float mag[kQuantThreads];
    const int t = (int)ds4_thread_x();
    const int64_t i = (int64_t)ds4_block_x() * kQuantThreads + t;
    float v = 0.0f;
    if (i < values) {
        if (groups == 1 && ldx == n) {  // contiguous columns (the experts' h and SwiGLU output): no divisions
            v = x[i];
        } else {
            const int64_t k = i / n;
            v = x[(k / groups) * ldx + (k % groups) * x_stride + i % n];
        }
    }
    mag[t] = ds4::num::abs_f32(v);
    ds4_sync_block();
    for (int w = ds4::gpu::kInt8Block / 2; w > 0; w /= 2) {
        if (t % ds4::gpu::kInt8Block < w) mag[t] = mag[t] < mag[t + w] ? mag[t + w] : mag[t];
        ds4_sync_block();
    }
    const float scale = mag[t - t % ds4::gpu::kInt8Block] / 127.0f;
    if (i < values) {
        q[i] = ds4::gpu::int8_code(v, scale);
        if (t % ds4::gpu::kInt8Block == 0) d[i / ds4::gpu::kInt8Block] = scale;
    }
}

#if DS4_GPU_HOST_CODE
#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

Int8Scope int8_scope() {
    // auto is `shared` until the Q8_0 matmuls are measured faster on int8 columns (docs/gpu-backend.md).
    switch (env_choice("DS4KIT_GPU_INT8", {"auto", "never", "experts", "shared", "all"})) {
        case 1: return Int8Scope::kNone;
        case 2: return Int8Scope::kExperts;
        case 4: return Int8Scope::kAll;
        default: return Int8Scope::kShared;
    }
}

int64_t int8_scales_offset(int64_t values) { return (values + 15) / 16 * 16; }

int64_t int8_columns_bytes(int64_t values) { return int8_scales_offset(values) + 4 * (values / kInt8Block); }

Int8Cols launch_int8_columns(const float* x, int64_t ldx, int64_t columns, int64_t groups, int64_t x_stride,
                             int64_t n, uint8_t* out, void* s) {
    if (n % kInt8Block != 0 || groups < 1) {
        throw ArgumentError(DS4_GPU_WHO ": int8 columns of " + std::to_string(n) + " values in " +
                            std::to_string(groups) + " groups: need whole blocks of 32 and a group");
    }
    const int64_t values = columns * groups * n;
    Int8Cols c{reinterpret_cast<const int8_t*>(out), reinterpret_cast<const float*>(out + int8_scales_offset(values))};
    if (values == 0) return c;
    ds4_launch(ds4_int8_columns_kernel, dim3((unsigned)((values + kQuantThreads - 1) / kQuantThreads)),
               dim3(kQuantThreads), s, x, ldx, groups, x_stride, n, values, reinterpret_cast<int8_t*>(out),
               reinterpret_cast<float*>(out + int8_scales_offset(values)));
    DS4_GPU_CHECK_LAUNCH("ds4_int8_columns_kernel");
    return c;
}

}  // namespace gpu
}  // namespace ds4
#endif
