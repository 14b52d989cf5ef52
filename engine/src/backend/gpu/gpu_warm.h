// The L2 warmer behind GpuBackend::prefetch: weights named ahead of the small kernels that come
// before them (Backend::prefetch) are asked into the L2 cache by a kernel on a stream of its
// own, forked from the main stream at the hint, so their bytes come from memory while the main
// stream's short, latency-bound kernels leave it idle, and the GEMV that reads them next finds
// part of them in L2. It reads only weights (uploaded once, never written) and writes nothing,
// so no computed bit depends on it; the main stream joins its stream only where a step ends
// (a graph's capture, a download, a synchronize), never mid-layer, so it never waits for it.
//
// DS4KIT_GPU_WARM: off (the default until measured better), l2 (prefetch.global.L2) or last
// (the same with the evict-last priority); DS4KIT_GPU_WARM_MB (24): the bytes a hint asks for,
// its weights in order (the L2 holds 50 MB on an H100 or H200); DS4KIT_GPU_WARM_BLOCKS (32): the
// warm kernel's blocks, few, so the main stream's kernels keep the SMs. CUDA on sm_80 and later
// only: HIP (gfx1151 has no L2 prefetch instruction) and HIP-CPU make it off.
// Host-only (plain C++ interface); implemented in gpu_warm.cu.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace ds4 {
namespace gpu {

struct WarmSpan {
    const uint8_t* data;  // device address
    uint64_t bytes;
};

class L2Warmer {
public:
    // The warmer DS4KIT_GPU_WARM asks for, or null when it is off or the target cannot warm.
    static std::unique_ptr<L2Warmer> from_env();
    ~L2Warmer();
    L2Warmer(const L2Warmer&) = delete;
    L2Warmer& operator=(const L2Warmer&) = delete;

    // Enqueues the warm kernel for `spans` (the first cap bytes of them, in order) on the warm
    // stream, after everything `main_stream` holds now.
    void warm(const std::vector<WarmSpan>& spans, void* main_stream);
    // main_stream waits for the warm stream's last kernel (no host wait); a no-op when none is
    // pending. Graph capture needs it before the capture ends.
    void join(void* main_stream);
    // Warm kernels enqueued so far (a replayed step graph enqueues none: its recording holds them).
    int64_t launches() const { return launches_; }

private:
    L2Warmer(int mode, uint64_t cap, unsigned blocks);
    int mode_;  // 1 l2, 2 last
    uint64_t cap_;
    unsigned blocks_;
    void* stream_ = nullptr;
    void* fork_ = nullptr;
    void* join_ = nullptr;
    bool pending_ = false;
    int64_t launches_ = 0;
    std::mutex mu_;
};

}  // namespace gpu
}  // namespace ds4
