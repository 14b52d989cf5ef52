// Minimal CUDA/HIP portability shim for the engine's .cu sources.
//
// nvcc and hipcc (with HIP headers) define the CUDA keywords and thread indices
// themselves. CI also compiles the HIP side with plain clang and no ROCm install
// (`clang++ -x hip -nogpulib --cuda-device-only`), where clang only pre-includes
// its HIP wrapper if the HIP headers exist; for that case this header maps the
// few keywords and builtins the kernels use onto clang's AMDGPU builtins.
#pragma once

#if defined(__HIPCC__)
#if __has_include(<hip/hip_runtime.h>)
#include <hip/hip_runtime.h>
#define DS4_GPU_HAVE_RUNTIME 1
#else
// No ROCm headers: device-only compile. Keywords are clang attributes.
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __host__
#define __host__ __attribute__((host))
#endif
#define DS4_GPU_HAVE_RUNTIME 0
#endif
#if DS4_GPU_HAVE_RUNTIME
__device__ inline unsigned ds4_thread_x() { return threadIdx.x; }
__device__ inline unsigned ds4_block_x() { return blockIdx.x; }
__device__ inline unsigned ds4_block_dim_x() { return blockDim.x; }
#else
// Without the headers there is no threadIdx: use clang's AMDGPU builtins.
__device__ inline unsigned ds4_thread_x() { return __builtin_amdgcn_workitem_id_x(); }
__device__ inline unsigned ds4_block_x() { return __builtin_amdgcn_workgroup_id_x(); }
__device__ inline unsigned ds4_block_dim_x() {
    // Workgroup size x lives in the dispatch packet (hsa_kernel_dispatch_packet_t, offset 4).
    return ((const unsigned short*)__builtin_amdgcn_dispatch_ptr())[2];
}
#endif
#elif defined(__CUDACC__)
#define DS4_GPU_HAVE_RUNTIME 1
__device__ inline unsigned ds4_thread_x() { return threadIdx.x; }
__device__ inline unsigned ds4_block_x() { return blockIdx.x; }
__device__ inline unsigned ds4_block_dim_x() { return blockDim.x; }
#else
#error "gpu_compat.h is for CUDA (nvcc) or HIP (clang/hipcc) compiles only"
#endif
