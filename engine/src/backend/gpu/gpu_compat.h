// Minimal CUDA/HIP portability shim for the engine's .cu sources (device side).
//
// nvcc and hipcc (with HIP headers) define the CUDA keywords and thread indices
// themselves. CI also compiles the HIP side with plain clang and no ROCm install
// (`clang++ -x hip -nogpulib -nogpuinc --cuda-device-only`), where clang only
// pre-includes its HIP wrapper if the HIP headers exist; for that case this header
// maps the few keywords and builtins the kernels use onto clang's AMDGPU builtins,
// and sets DS4_GPU_HAVE_RUNTIME to 0 so host-only code (launchers, the backend
// class) compiles out.
//
// Wave size: nothing here or in the kernels assumes 32 or 64 lanes. Reductions go
// through shared memory with a fixed block size (a multiple of both), or for their last
// levels through shuffles within aligned groups of 32 lanes (ds4_shfl_down32), so gfx1151
// (wave32), CDNA (wave64) and NVIDIA (warp 32) reduce in the same order.
#pragma once
#include "core/hd.h"  // __host__ / __device__ without the ROCm headers

#if defined(__HIP_CPU_RT__)
// HIP-CPU (DS4KIT_GPU=hip-cpu): the header-only HIP runtime that runs kernels on the
// host, so the backend's code can be tested on a machine without a GPU.
#define DS4_GPU_HAVE_RUNTIME 1
__device__ inline unsigned ds4_thread_x() { return threadIdx.x; }
__device__ inline unsigned ds4_block_x() { return blockIdx.x; }
__device__ inline unsigned ds4_block_y() { return blockIdx.y; }
__device__ inline unsigned ds4_block_dim_x() { return blockDim.x; }
__device__ inline unsigned ds4_grid_dim_x() { return gridDim.x; }
__device__ inline void ds4_sync_block() { __syncthreads(); }
#elif defined(__HIPCC__)
// The runtime counts as present when clang pre-included its HIP wrapper (not -nogpuinc)
// and the ROCm headers exist: ROCm headers lying in /usr/include do not make a
// -nogpuinc compile a host compile.
#if defined(__CLANG_HIP_RUNTIME_WRAPPER_INCLUDED__) && __has_include(<hip/hip_runtime.h>)
#include <hip/hip_runtime.h>
#define DS4_GPU_HAVE_RUNTIME 1
#else
// No ROCm headers: device-only compile. Keywords are clang attributes.
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#define DS4_GPU_HAVE_RUNTIME 0
#endif
#if DS4_GPU_HAVE_RUNTIME
__device__ inline unsigned ds4_thread_x() { return threadIdx.x; }
__device__ inline unsigned ds4_block_x() { return blockIdx.x; }
__device__ inline unsigned ds4_block_y() { return blockIdx.y; }
__device__ inline unsigned ds4_block_dim_x() { return blockDim.x; }
__device__ inline unsigned ds4_grid_dim_x() { return gridDim.x; }
__device__ inline void ds4_sync_block() { __syncthreads(); }
#else
// Without the headers there is no threadIdx: use clang's AMDGPU builtins.
__device__ inline unsigned ds4_thread_x() { return __builtin_amdgcn_workitem_id_x(); }
__device__ inline unsigned ds4_block_x() { return __builtin_amdgcn_workgroup_id_x(); }
__device__ inline unsigned ds4_block_y() { return __builtin_amdgcn_workgroup_id_y(); }
__device__ inline unsigned ds4_block_dim_x() {
    // Workgroup size x lives in the dispatch packet (hsa_kernel_dispatch_packet_t, offset 4).
    return ((const unsigned short*)__builtin_amdgcn_dispatch_ptr())[2];
}
// Blocks in x: the packet's grid size in work-items (offset 12) over the workgroup's.
__device__ inline unsigned ds4_grid_dim_x() {
    return ((const unsigned*)__builtin_amdgcn_dispatch_ptr())[3] / ds4_block_dim_x();
}
// __syncthreads as HIP spells it: a workgroup barrier between release and acquire fences.
__device__ inline void ds4_sync_block() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#endif
#elif defined(__CUDACC__)
#define DS4_GPU_HAVE_RUNTIME 1
__device__ inline unsigned ds4_thread_x() { return threadIdx.x; }
__device__ inline unsigned ds4_block_x() { return blockIdx.x; }
__device__ inline unsigned ds4_block_y() { return blockIdx.y; }
__device__ inline unsigned ds4_block_dim_x() { return blockDim.x; }
__device__ inline unsigned ds4_grid_dim_x() { return gridDim.x; }
__device__ inline void ds4_sync_block() { __syncthreads(); }
#else
#error "gpu_compat.h is for CUDA (nvcc) or HIP (clang/hipcc) compiles only"
#endif

// a * b + c rounded once, on every target (kernels spell out each FMA they want;
// the build disables contraction of everything else).
#if defined(__CUDACC__) && !defined(__clang__)
__device__ inline float ds4_fmaf(float a, float b, float c) { return __fmaf_rn(a, b, c); }
#else
__device__ inline float ds4_fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
#endif

// The first statement of every kernel. With programmatic dependent launch (CUDA on Hopper
// and later, gpu_launch.cu pdl_launches) a kernel may be launched while the one before it in
// the stream still runs: here it waits until that kernel has finished and its writes are
// visible (griddepcontrol.wait), then lets the next kernel launch (launch_dependents), so the
// next kernel's blocks are scheduled while this one computes and the gap between two kernels
// of a step shrinks. The wait comes first and unconditionally: a kernel that returned before
// it could let the one after it run ahead of this kernel's producer. Launched without the
// attribute (HIP, older GPUs, DS4KIT_GPU_PDL=never) both are no-ops. tests/engine/test_gpu_kernel_entry.py checks
// that every kernel begins with it.
__device__ inline void ds4_kernel_entry() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// ds4_shfl_down32(v, s): lane l + s's v within l's aligned group of 32 lanes (a warp; a half of
// a wave64), for 0 < s < 32 and l % 32 + s < 32 (the reduction trees read no further); every
// lane of the warp must call it. DS4_GPU_SHUFFLE32 says whether the target has it: CUDA and
// HIP do; the HIP-CPU runtime does not (its warps are the host's SIMD width, not 32), unless a
// host simulation (tests/gpu_host_sim/sim_runtime.h) brings its own 32-lane shuffle.
// ds4_shfl_down32_i: the same for an int (the int8 walks' exact partial sums).
#if defined(__HIP_CPU_RT__)
#if defined(DS4_GPU_SIM_SHUFFLE)
#define DS4_GPU_SHUFFLE32 1
__device__ inline float ds4_shfl_down32(float v, int s) { return ds4_sim_shfl_down32(v, s); }
__device__ inline int ds4_shfl_down32_i(int v, int s) { return ds4_sim_shfl_down32_i(v, s); }
#else
#define DS4_GPU_SHUFFLE32 0
#endif
#elif defined(__CUDACC__) && !defined(__HIPCC__)
#define DS4_GPU_SHUFFLE32 1
__device__ inline float ds4_shfl_down32(float v, int s) { return __shfl_down_sync(0xffffffffu, v, s, 32); }
__device__ inline int ds4_shfl_down32_i(int v, int s) { return __shfl_down_sync(0xffffffffu, v, s, 32); }
#elif DS4_GPU_HAVE_RUNTIME
#define DS4_GPU_SHUFFLE32 1
__device__ inline float ds4_shfl_down32(float v, int s) { return __shfl_down(v, (unsigned)s, 32); }
__device__ inline int ds4_shfl_down32_i(int v, int s) { return __shfl_down(v, (unsigned)s, 32); }
#else
// Device-only HIP compile: what HIP's __shfl_down does, from clang's AMDGPU builtins (the lane
// index, then a read of lane l + s's register through ds_bpermute's byte address).
#define DS4_GPU_SHUFFLE32 1
__device__ inline int ds4_shfl_down32_i(int v, int s) {
    const int lane = (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
    const int src = (lane & 31) + s < 32 ? lane + s : lane;
    return __builtin_amdgcn_ds_bpermute(src << 2, v);
}
__device__ inline float ds4_shfl_down32(float v, int s) {
    return __builtin_bit_cast(float, ds4_shfl_down32_i(__builtin_bit_cast(int, v), s));
}
#endif

// ds4_sync_warp(): a warp's shared-memory writes made visible to the warp's other lanes (a
// warp-local table written by each lane, then read by all). CUDA: __syncwarp. AMDGPU: a wave's
// LDS instructions execute for all its lanes in order, so only the compiler must not move
// accesses across it (fences at wavefront scope around a wave barrier; a warp of 32 lanes is a
// whole wave32 or half a wave64). HIP-CPU and the host simulations have no warps: there it is a
// block barrier, so a kernel calls it from every warp of the block the same number of times.
#if defined(__HIP_CPU_RT__)
__device__ inline void ds4_sync_warp() { __syncthreads(); }
#elif defined(__CUDACC__) && !defined(__HIPCC__)
__device__ inline void ds4_sync_warp() { __syncwarp(); }
#else
__device__ inline void ds4_sync_warp() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#endif

// *p += v as one atomic operation on a shared-memory int (histograms). The device-only HIP
// compile has no atomicAdd, so clang's generic builtin there.
#if DS4_GPU_HAVE_RUNTIME
__device__ inline void ds4_atomic_add_shared(int* p, int v) { atomicAdd(p, v); }
#else
__device__ inline void ds4_atomic_add_shared(int* p, int v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
#endif

// Register cap for the matrix kernels (blocks of gpu_dot.h kDotBlock = 256 threads): two
// resident blocks per NVIDIA multiprocessor (ptxas gave the decode experts 137 registers,
// one block: two warps per scheduler could not hide the fma chains). HIP's second argument
// means something else; there only the size, as the attribute hip's __launch_bounds__(256)
// becomes (the device-only check compiles without hip headers).
#if defined(__CUDACC__) && !defined(__clang__)
#define DS4_DOT_BOUNDS __launch_bounds__(256, 2)
#elif defined(__HIP_CPU_RT__)
#define DS4_DOT_BOUNDS
#else
#define DS4_DOT_BOUNDS __attribute__((amdgpu_flat_work_group_size(1, 256)))
#endif

// True in the host pass of a .cu file that has the runtime: launchers and the backend class.
#if DS4_GPU_HAVE_RUNTIME && !defined(__HIP_DEVICE_COMPILE__) && !defined(__CUDA_ARCH__)
#define DS4_GPU_HOST_CODE 1
#else
#define DS4_GPU_HOST_CODE 0
#endif

#if DS4_GPU_HOST_CODE
namespace ds4 {
namespace gpu {
// Whether launches carry programmatic dependent launch (gpu_launch.cu says when).
bool pdl_launches();
// The blocks of `kernel` (of `threads` threads) the whole GPU holds at once, from the occupancy
// calculator; 0 where the runtime cannot say (HIP-CPU). Cached per kernel.
unsigned resident_blocks(const void* kernel, int threads);
}  // namespace gpu
}  // namespace ds4

// kernel<<<grid, block, 0, stream>>>(args...), or HIP-CPU's launch macro (plain C++ has
// no <<<>>>). A function pointer, so template kernels need no parentheses in macros. On CUDA
// with pdl_launches(), the same launch with the programmatic-serialization attribute
// (ds4_kernel_entry says what it allows); a failure is left for DS4_GPU_CHECK_LAUNCH, which
// reads it from cudaGetLastError as it does a <<<>>> launch's.
template <class... P, class... A>
inline void ds4_launch(void (*kernel)(P...), dim3 grid, dim3 block, void* stream, A... args) {
#if defined(__HIP_CPU_RT__)
    hipLaunchKernelGGL(kernel, grid, block, 0, (hipStream_t)stream, args...);
#elif defined(__HIPCC__)
    kernel<<<grid, block, 0, (hipStream_t)stream>>>(args...);
#else
    if (ds4::gpu::pdl_launches()) {
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.dynamicSmemBytes = 0;
        cfg.stream = (cudaStream_t)stream;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        (void)cudaLaunchKernelEx(&cfg, kernel, args...);
    } else {
        kernel<<<grid, block, 0, (cudaStream_t)stream>>>(args...);
    }
#endif
}
#endif
