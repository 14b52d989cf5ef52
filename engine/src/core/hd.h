// DS4_HD: functions compiled for the host and, in CUDA/HIP sources, for the device
// too (core/numerics.h, quant/rocmfp_codes.h). Plain inline on host compilers.
// The one definition of the macro; include this rather than spelling it out.
#pragma once

#if defined(__HIP_CPU_RT__)
// The HIP-CPU runtime (a test build that runs the GPU code on the host): host code.
#define DS4_HD
#elif defined(__CUDACC__) || defined(__HIPCC__)
#if defined(__HIPCC__) && !defined(__host__)
// clang HIP without the ROCm headers (-nogpuinc, the device-only CI check): the
// keywords are clang attributes that no header has defined.
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#endif
#define DS4_HD __host__ __device__
#else
#define DS4_HD
#endif
