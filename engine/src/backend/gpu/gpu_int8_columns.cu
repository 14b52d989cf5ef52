// Int8 columns (gpu_int8.h): the one quantiser every int8 walk reads its columns from (the
// experts', gpu_moe_int8.cu, and the Q8_0 matmul's, gpu_matmul_int8.cu), and the switch that
// says which matrices take them (DS4KIT_GPU_INT8).
#include "backend/gpu/gpu_int8.h"

#include <stdint.h>

// A block of kInt8QuantThreads threads: gpu_int8.h's int8_columns_block.
extern "C" __global__ void ds4_int8_columns_kernel(const float* x, int64_t ldx, int64_t groups, int64_t x_stride,
                                                   int64_t n, int64_t values, int8_t* q, float* d) {
    ds4_kernel_entry();
    ds4::gpu::int8_columns_block(ds4_block_x(), x, ldx, groups, x_stride, n, values, q, d);
}

#if DS4_GPU_HOST_CODE
#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

Int8Scope int8_scope() {
    // auto is `all` since step 33 (the H200, the issue's file: chained decode 1.647 against
    // 1.740 ms with `shared`, prefill of 512 3110 against 2370 tok/s, verify of 8 5.10 against
    // 6.85 ms; docs/gpu-backend.md).
    switch (env_choice("DS4KIT_GPU_INT8", {"auto", "never", "experts", "shared", "all"})) {
        case 1: return Int8Scope::kNone;
        case 2: return Int8Scope::kExperts;
        case 3: return Int8Scope::kShared;
        default: return Int8Scope::kAll;
    }
}

int64_t int8_scales_offset(int64_t values) { return (values + 15) / 16 * 16; }

int64_t int8_columns_bytes(int64_t values) { return int8_scales_offset(values) + 4 * (values / kInt8Block); }

Int8ColsOut int8_columns_at(uint8_t* out, int64_t values) {
    return Int8ColsOut{reinterpret_cast<int8_t*>(out), reinterpret_cast<float*>(out + int8_scales_offset(values))};
}

Int8Cols launch_int8_columns(const float* x, int64_t ldx, int64_t columns, int64_t groups, int64_t x_stride,
                             int64_t n, uint8_t* out, void* s) {
    if (n % kInt8Block != 0 || groups < 1) {
        throw ArgumentError(DS4_GPU_WHO ": int8 columns of " + std::to_string(n) + " values in " +
                            std::to_string(groups) + " groups: need whole blocks of 32 and a group");
    }
    const int64_t values = columns * groups * n;
    const Int8ColsOut c = int8_columns_at(out, values);
    if (values == 0) return Int8Cols{c.q, c.d};
    ds4_launch(ds4_int8_columns_kernel, dim3((unsigned)int8_columns_blocks(values)),
               dim3(kInt8QuantThreads), s, x, ldx, groups, x_stride, n, values, c.q, c.d);
    DS4_GPU_CHECK_LAUNCH("ds4_int8_columns_kernel");
    return Int8Cols{c.q, c.d};
}

}  // namespace gpu
}  // namespace ds4
#endif
