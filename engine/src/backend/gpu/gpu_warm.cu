// The L2 warmer (gpu_warm.h): its kernel and its stream.
#include "backend/gpu/gpu_compat.h"

#include <stdint.h>

namespace {
constexpr int kWarmThreads = 256;
constexpr int kMaxWarmSpans = 8;
constexpr uint64_t kLine = 128;  // an L2 request's bytes

struct WarmArgs {
    const uint8_t* data[kMaxWarmSpans];
    uint64_t bytes[kMaxWarmSpans];
    int n;
};

// Asks the L2 for the line at p without waiting for it or holding a register; `last` marks it
// evict-last. Nothing where the target has no such instruction (the host never launches it there).
__device__ inline void warm_line(const uint8_t* p, int last) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__clang__)
    if (last) {
        asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p));
    } else {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
    }
#else
    (void)p;
    (void)last;
#endif
}

// Every thread of the grid asks for every (grid size)-th line of each span in turn.
extern "C" __global__ void ds4_warm_l2_kernel(WarmArgs a, int last) {
    ds4_kernel_entry();
    const uint64_t step = (uint64_t)ds4_grid_dim_x() * kWarmThreads;
    const uint64_t first = (uint64_t)ds4_block_x() * kWarmThreads + ds4_thread_x();
    for (int s = 0; s < a.n; ++s) {
        const uint64_t lines = (a.bytes[s] + kLine - 1) / kLine;
        for (uint64_t i = first; i < lines; i += step) warm_line(a.data[s] + i * kLine, last);
    }
}
}  // namespace

#if DS4_GPU_HOST_CODE
#include "backend/gpu/gpu_runtime.h"
#include "backend/gpu/gpu_warm.h"

namespace ds4 {
namespace gpu {

std::unique_ptr<L2Warmer> L2Warmer::from_env() {
    const int mode = env_choice("DS4KIT_GPU_WARM", {"off", "l2", "last"});
    const uint64_t mb = (uint64_t)env_int("DS4KIT_GPU_WARM_MB", 24, 1, 1 << 16);
    const unsigned blocks = (unsigned)env_int("DS4KIT_GPU_WARM_BLOCKS", 32, 1, 1 << 16);
#if defined(__HIPCC__) || defined(__HIP_CPU_RT__)
    (void)mode;
    (void)mb;
    (void)blocks;
    return nullptr;  // no L2 prefetch instruction on the HIP targets (nor an L2 on HIP-CPU)
#else
    int dev = 0, major = 0;
    DS4_GPU_CHECK(GetDevice, &dev);
    DS4_GPU_CHECK(DeviceGetAttribute, &major, cudaDevAttrComputeCapabilityMajor, dev);
    if (mode == 0 || major < 8) return nullptr;
    return std::unique_ptr<L2Warmer>(new L2Warmer(mode, mb << 20, blocks));
#endif
}

L2Warmer::L2Warmer(int mode, uint64_t cap, unsigned blocks) : mode_(mode), cap_(cap), blocks_(blocks) {
    ds4_gpu_stream_t s = nullptr;
    ds4_gpu_event_t f = nullptr, j = nullptr;
    DS4_GPU_CHECK(StreamCreateWithFlags, &s, ds4GpuStreamNonBlocking);
    stream_ = s;
    DS4_GPU_CHECK(EventCreateWithFlags, &f, ds4GpuEventDisableTiming);
    fork_ = f;
    DS4_GPU_CHECK(EventCreateWithFlags, &j, ds4GpuEventDisableTiming);
    join_ = j;
}

L2Warmer::~L2Warmer() {
    if (fork_) (void)DS4_GPU_RT(EventDestroy)((ds4_gpu_event_t)fork_);
    if (join_) (void)DS4_GPU_RT(EventDestroy)((ds4_gpu_event_t)join_);
    if (stream_) (void)DS4_GPU_RT(StreamDestroy)((ds4_gpu_stream_t)stream_);
}

void L2Warmer::warm(const std::vector<WarmSpan>& spans, void* main_stream) {
    WarmArgs a{};
    uint64_t left = cap_;
    for (const WarmSpan& sp : spans) {
        if (a.n == kMaxWarmSpans || left == 0) break;
        if (!sp.data || sp.bytes == 0) continue;
        a.data[a.n] = sp.data;
        a.bytes[a.n] = sp.bytes < left ? sp.bytes : left;
        left -= a.bytes[a.n++];
    }
    if (a.n == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    const auto ws = (ds4_gpu_stream_t)stream_;
    DS4_GPU_CHECK(EventRecord, (ds4_gpu_event_t)fork_, (ds4_gpu_stream_t)main_stream);
    DS4_GPU_CHECK(StreamWaitEvent, ws, (ds4_gpu_event_t)fork_, 0);
    ds4_launch(ds4_warm_l2_kernel, dim3(blocks_), dim3(kWarmThreads), stream_, a, mode_ == 2 ? 1 : 0);
    DS4_GPU_CHECK_LAUNCH("ds4_warm_l2_kernel");
    DS4_GPU_CHECK(EventRecord, (ds4_gpu_event_t)join_, ws);
    pending_ = true;
    ++launches_;
}

void L2Warmer::join(void* main_stream) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending_) return;
    DS4_GPU_CHECK(StreamWaitEvent, (ds4_gpu_stream_t)main_stream, (ds4_gpu_event_t)join_, 0);
    pending_ = false;
}

}  // namespace gpu
}  // namespace ds4
#endif
