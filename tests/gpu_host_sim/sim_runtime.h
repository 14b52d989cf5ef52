// A block of GPU threads simulated with host threads, enough to run a kernel of the GPU backend
// on the CPU: every thread of a block is a std::thread, __syncthreads a std::barrier, shared
// memory the kernel's function-local statics (one copy, as one block's), atomics std::atomic_ref,
// gpu_compat.h's 32-lane shuffle a block-wide exchange between two barriers (so every simulated
// kernel takes group_reduce's shuffle path, as CUDA and HIP do). Blocks run one after another. Include it before a kernel source with -D__HIP_CPU_RT__ and
// -D__HIP_DEVICE_COMPILE__ (gpu_compat.h then takes its HIP-CPU branch and leaves the launchers
// out). Only for kernels whose early returns are whole-block ones (a lone returning thread would
// leave the others at a barrier, as it would on a GPU).
#pragma once
#include <atomic>
#include <barrier>
#include <bit>
#include <functional>
#include <thread>
#include <vector>

struct SimDim3 {
    unsigned x = 0, y = 0, z = 0;
};
inline thread_local SimDim3 threadIdx, blockIdx, blockDim, gridDim;
inline std::barrier<>* g_sim_barrier = nullptr;
inline void __syncthreads() { g_sim_barrier->arrive_and_wait(); }
template <class T>
inline T atomicAdd(T* p, T v) {
    return std::atomic_ref<T>(*p).fetch_add(v);
}
// A 32-lane shuffle for gpu_compat.h's ds4_shfl_down32 (the HIP-CPU runtime has none): every
// thread of the block calls it together (as every lane of a warp must), writes its value, and
// reads lane t + s's within its aligned group of 32 (its own past the group's end). Built with
// -DDS4_GPU_SIM_NO_SHUFFLE, the kernels take their paths for targets without shuffles.
#ifndef DS4_GPU_SIM_NO_SHUFFLE
#define DS4_GPU_SIM_SHUFFLE 1
#endif
inline std::vector<float> g_sim_lanes;
inline float ds4_sim_shfl_down32(float v, int s) {
    const unsigned t = threadIdx.x;
    g_sim_lanes[t] = v;
    __syncthreads();
    const float r = (t % 32) + (unsigned)s < 32 ? g_sim_lanes[t + (unsigned)s] : v;
    __syncthreads();
    return r;
}
inline int ds4_sim_shfl_down32_i(int v, int s) {  // an int's bits through the float lanes
    return std::bit_cast<int>(ds4_sim_shfl_down32(std::bit_cast<float>(v), s));
}
#define __global__
#define __device__
#define __host__
#define __shared__ static

// Runs call() as a grid of gx x gy blocks of `threads` threads.
inline void sim_launch(unsigned gx, unsigned gy, unsigned threads, const std::function<void()>& call) {
    std::barrier<> bar((std::ptrdiff_t)threads);
    g_sim_barrier = &bar;
    g_sim_lanes.assign(threads, 0.0f);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            threadIdx = {t, 0, 0};
            blockDim = {threads, 1, 1};
            gridDim = {gx, gy, 1};
            for (unsigned by = 0; by < gy; ++by) {
                for (unsigned bx = 0; bx < gx; ++bx) {
                    blockIdx = {bx, by, 0};
                    call();
                    bar.arrive_and_wait();  // the next block starts when this one is done
                }
            }
        });
    }
    for (std::thread& th : pool) th.join();
}
