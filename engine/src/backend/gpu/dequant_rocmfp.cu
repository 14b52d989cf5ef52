// Dequantise rows of a Lucebox ROCmFP tensor (types 100, 101, 102, 103, 104, 107)
// to float32 on the GPU. One source for CUDA and HIP; the decoding itself is the
// DS4_HD code in quant/rocmfp_codes.h that the CPU kernels (and their tests) use,
// so the GPU cannot drift from the tested CPU reference.
//
// Compile checks that work on a machine without GPU or ROCm (scripts/check-gpu-compile,
// tests/quant/test_quant_gpu_source.py): nvcc -arch=sm_90 -c, and clang++-19 -x hip
// --offload-arch=gfx1151 --cuda-device-only -nogpulib -nogpuinc -S. Without -nogpuinc
// clang stops with "cannot find HIP runtime"; with -c instead of -S (or -emit-llvm /
// -fgpu-rdc) it needs lld to link the device code object.
#include "gpu_compat.h"
#include "quant/rocmfp_codes.h"

#include <stdint.h>

// One thread per output element: element i lives in block i/32, slot i%32.
extern "C" __global__ void ds4_dequant_rocmfp_kernel(uint32_t type, const uint8_t* src, float* dst,
                                                     int64_t n_elements) {
    ds4_kernel_entry();
    const int64_t i = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (i >= n_elements) return;
    const int bytes = ds4::rocmfp::block_bytes(type);
    const uint8_t* blk = src + (i >> 5) * bytes;
    dst[i] = ds4::rocmfp::element(type, blk, (int)(i & 31));
}

#if DS4_GPU_HOST_CODE
// Host launcher. Returns 0 on success, -1 for a non-ROCmFP type or a length that
// is not a whole number of 32-element blocks, else the runtime's error code.
extern "C" int ds4_gpu_dequant_rocmfp(uint32_t type, const uint8_t* src_dev, float* dst_dev,
                                      int64_t n_elements, void* stream) {
    if (ds4::rocmfp::block_bytes(type) == 0 || n_elements % 32 != 0) return -1;
    if (n_elements == 0) return 0;
    const unsigned threads = 256;
    const unsigned blocks = (unsigned)((n_elements + threads - 1) / threads);
    ds4_launch(ds4_dequant_rocmfp_kernel, dim3(blocks), dim3(threads), stream, type, src_dev, dst_dev, n_elements);
#if defined(__HIPCC__)
    return (int)hipGetLastError();
#else
    return (int)cudaGetLastError();
#endif
}
#endif
