// The device's memory bandwidth, measured the way a benchmark's fractions need it (bench engine
// reports tok/s x bytes a token reads / this): a read kernel (every thread sums 16-byte loads
// over a grid-stride walk and writes one float, so nothing is dropped) and a copy kernel, each
// timed with events over arrays far larger than the L2, best of several passes. The read is
// what decode does (weights streamed, nothing written); the copy counts its bytes twice, as
// STREAM does. Not a model operation: no bit of any result depends on it.
#include "backend/gpu/gpu_compat.h"

#include <stdint.h>

namespace {
constexpr int kLimitThreads = 256;

struct alignas(16) Vec4 {
    float a, b, c, d;
};

// stride: the launch's threads (blocks x kLimitThreads).
extern "C" __global__ void ds4_limits_read_kernel(const Vec4* src, int64_t n, int64_t stride, float* sink) {
    ds4_kernel_entry();
    float s = 0.0f;
    for (int64_t i = (int64_t)ds4_block_x() * kLimitThreads + ds4_thread_x(); i < n; i += stride) {
        const Vec4 v = src[i];
        s += v.a + v.b + v.c + v.d;
    }
    sink[(int64_t)ds4_block_x() * kLimitThreads + ds4_thread_x()] = s;
}

extern "C" __global__ void ds4_limits_copy_kernel(const Vec4* src, Vec4* dst, int64_t n, int64_t stride) {
    ds4_kernel_entry();
    for (int64_t i = (int64_t)ds4_block_x() * kLimitThreads + ds4_thread_x(); i < n; i += stride) dst[i] = src[i];
}
}  // namespace

#if DS4_GPU_HOST_CODE
#include <algorithm>
#include <string>

#include "backend/gpu/gpu_backend.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {

DeviceLimits measure_gpu_device_limits(uint64_t array_bytes, int passes) {
#if defined(__HIP_CPU_RT__)
    (void)array_bytes, (void)passes;
    throw UnsupportedError(DS4_GPU_WHO ": the HIP-CPU test runtime has no device memory to measure");
#else
    if (passes < 1) throw ArgumentError(DS4_GPU_WHO ": device limits need at least one pass, got " + std::to_string(passes));
    if (array_bytes < (1u << 20)) {
        throw ArgumentError(DS4_GPU_WHO ": device limits need arrays of at least 1 MiB, got " + std::to_string(array_bytes) +
                            " bytes");
    }
    const std::string status = gpu_device_status();
    if (status != "ok") throw UnsupportedError(DS4_GPU_WHO ": " + status);
    DS4_GPU_CHECK(SetDevice, 0);
    ds4_gpu_device_prop_t prop{};
    DS4_GPU_CHECK(GetDeviceProperties, &prop, 0);
    DeviceLimits out;
    out.device = prop.name;
#if defined(__HIPCC__)
    out.arch = prop.gcnArchName;
#else
    out.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
#endif
    out.multiprocessors = prop.multiProcessorCount;
    out.l2_bytes = (uint64_t)prop.l2CacheSize;
    out.total_bytes = (uint64_t)prop.totalGlobalMem;
    out.passes = passes;
    // At least 8x the L2, so every pass streams from memory.
    const uint64_t n = std::max<uint64_t>(array_bytes, 8 * out.l2_bytes) / sizeof(Vec4);
    out.array_bytes = n * sizeof(Vec4);
    const unsigned blocks = (unsigned)std::max(1, out.multiprocessors) * 8;
    const int64_t stride = (int64_t)blocks * kLimitThreads;
    Vec4 *a = nullptr, *b = nullptr;
    float* sink = nullptr;
    ds4_gpu_event_t t0 = nullptr, t1 = nullptr;
    auto release = [&] {
        if (a) (void)DS4_GPU_RT(Free)(a);
        if (b) (void)DS4_GPU_RT(Free)(b);
        if (sink) (void)DS4_GPU_RT(Free)(sink);
        if (t0) (void)DS4_GPU_RT(EventDestroy)(t0);
        if (t1) (void)DS4_GPU_RT(EventDestroy)(t1);
    };
    try {
        DS4_GPU_CHECK(Malloc, (void**)&a, out.array_bytes);
        DS4_GPU_CHECK(Malloc, (void**)&b, out.array_bytes);
        DS4_GPU_CHECK(Malloc, (void**)&sink, (size_t)blocks * kLimitThreads * sizeof(float));
        DS4_GPU_CHECK(Memset, a, 0, out.array_bytes);  // every page touched before timing
        DS4_GPU_CHECK(Memset, b, 0, out.array_bytes);
        DS4_GPU_CHECK(EventCreate, &t0);
        DS4_GPU_CHECK(EventCreate, &t1);
        auto timed = [&](bool copy) {
            float best_ms = 0.0f;
            for (int p = 0; p <= passes; ++p) {  // pass 0 warms up and is not counted
                DS4_GPU_CHECK(EventRecord, t0, nullptr);
                if (copy) {
                    ds4_launch(ds4_limits_copy_kernel, dim3(blocks), dim3(kLimitThreads), nullptr, a, b, (int64_t)n, stride);
                } else {
                    ds4_launch(ds4_limits_read_kernel, dim3(blocks), dim3(kLimitThreads), nullptr, a, (int64_t)n, stride, sink);
                }
                DS4_GPU_CHECK_LAUNCH(copy ? "ds4_limits_copy_kernel" : "ds4_limits_read_kernel");
                DS4_GPU_CHECK(EventRecord, t1, nullptr);
                DS4_GPU_CHECK(EventSynchronize, t1);
                float ms = 0.0f;
                DS4_GPU_CHECK(EventElapsedTime, &ms, t0, t1);
                if (p > 0 && (best_ms == 0.0f || ms < best_ms)) best_ms = ms;
            }
            return (double)best_ms * 1e-3;
        };
        out.read_bytes_per_s = (double)out.array_bytes / timed(false);
        out.copy_bytes_per_s = 2.0 * (double)out.array_bytes / timed(true);
    } catch (...) {
        release();
        throw;
    }
    release();
    return out;
#endif
}

}  // namespace ds4
#endif
