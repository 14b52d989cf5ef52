// Where the device layout of weight rows differs from the file's (gpu_dequant.h): Q8_0
// rows are stored split, the row's nb x 32 int8 codes and then its nb f16 scales, in the
// same row_bytes, so a chunk's codes are one aligned 8-byte load. WeightStore::bind copies
// a Q8_0 tensor's rows into a staging buffer and this kernel writes them split.
#include "backend/gpu/gpu_compat.h"

#include <stdint.h>

// One thread per block: block b of row r (34 bytes at src + r * 34 nb + 34 b: f16 scale,
// 32 codes) to the codes at dst_r + 32 b and the scale at dst_r + 32 nb + 2 b.
extern "C" __global__ void ds4_q8_0_split_kernel(const uint8_t* src, uint8_t* dst, int64_t n_rows, int64_t nb) {
    ds4_kernel_entry();
    const int64_t k = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (k >= n_rows * nb) return;
    const int64_t r = k / nb, b = k % nb, row_bytes = 34 * nb;
    const uint8_t* s = src + r * row_bytes + 34 * b;
    uint8_t* d = dst + r * row_bytes;
    for (int j = 0; j < 32; ++j) d[32 * b + j] = s[2 + j];
    d[32 * nb + 2 * b] = s[0];
    d[32 * nb + 2 * b + 1] = s[1];
}

#if DS4_GPU_HOST_CODE
#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

void launch_q8_0_split(const uint8_t* src, uint8_t* dst, int64_t n_rows, int64_t nb, void* s) {
    const int64_t work = n_rows * nb;
    if (work <= 0) return;
    ds4_launch(ds4_q8_0_split_kernel, dim3((unsigned)((work + 255) / 256)), dim3(256), s, src, dst, n_rows, nb);
    DS4_GPU_CHECK_LAUNCH("ds4_q8_0_split_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
