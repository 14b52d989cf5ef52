// How kernels are launched. Programmatic dependent launch: whether ds4_launch (gpu_compat.h)
// asks for it. On by default where it can work: CUDA, a GPU of compute capability 9.0 or later
// (Hopper), and kernels compiled for it (their griddepcontrol.wait is compiled in only from
// sm_90: a library built for an older architecture and run on a Hopper GPU through its PTX must
// not let kernels overlap). DS4KIT_GPU_PDL=never turns it off (to measure what it buys). It
// changes no bit: every kernel still starts after its producer has finished (ds4_kernel_entry).
// resident_blocks: how many blocks of a kernel the GPU holds at once (the strided grids of the
// matrix kernels take at most that many).
#include "backend/gpu/gpu_compat.h"

// Compiled like every kernel, so its PTX version says whether kernels hold the wait.
extern "C" __global__ void ds4_pdl_probe_kernel() { ds4_kernel_entry(); }

#if DS4_GPU_HOST_CODE
#include <mutex>
#include <unordered_map>

#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {
bool pdl_possible() {
#if defined(__HIPCC__) || defined(__HIP_CPU_RT__)
    return false;
#else
    if (env_choice("DS4KIT_GPU_PDL", {"auto", "never"}) == 1) return false;
    int dev = 0, major = 0;
    cudaFuncAttributes fa{};
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, ds4_pdl_probe_kernel) != cudaSuccess) {
        (void)cudaGetLastError();  // no device: plain launches, which report the real error
        return false;
    }
    return major >= 9 && fa.ptxVersion >= 90;
#endif
}
}  // namespace

bool pdl_launches() {
    static const bool on = pdl_possible();
    return on;
}

unsigned resident_blocks(const void* kernel, int threads) {
#if defined(__HIP_CPU_RT__)
    (void)kernel, (void)threads;
    return 0;
#else
    static std::mutex mu;
    static std::unordered_map<const void*, unsigned> known;
    std::lock_guard<std::mutex> lock(mu);
    const auto it = known.find(kernel);
    if (it != known.end()) return it->second;
    int dev = 0, sms = 0, per_sm = 0;
    unsigned n = 0;
    if (DS4_GPU_RT(GetDevice)(&dev) == DS4_GPU_RT(Success) &&
        DS4_GPU_RT(DeviceGetAttribute)(&sms, ds4GpuDevAttrMultiProcessorCount, dev) == DS4_GPU_RT(Success) &&
        DS4_GPU_RT(OccupancyMaxActiveBlocksPerMultiprocessor)(&per_sm, kernel, threads, 0) == DS4_GPU_RT(Success)) {
        n = (unsigned)(sms > 0 && per_sm > 0 ? sms * per_sm : 0);
    } else {
        (void)DS4_GPU_RT(GetLastError)();  // no answer: the caller launches its full grid
    }
    known.emplace(kernel, n);
    return n;
#endif
}

}  // namespace gpu
}  // namespace ds4
#endif
