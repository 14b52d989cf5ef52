// Backends by name (backend.h make_backend): the CPU backend is always built;
// the GPU backend only with DS4KIT_GPU=cuda|hip, which defines DS4KIT_HAVE_GPU
// and DS4KIT_GPU_KIND on the core library.
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_api.h"
#include "common/error.h"
#if defined(DS4KIT_HAVE_GPU)
#include "backend/gpu/gpu_backend.h"
#endif

namespace ds4 {

namespace {

#if defined(DS4KIT_HAVE_GPU)
constexpr const char* kBuiltGpu = DS4KIT_GPU_KIND;
#else
constexpr const char* kBuiltGpu = "";
#endif

std::string not_built(const std::string& kind) {
    std::string msg = "the " + kind + " backend is not built into this engine (rebuild with DS4KIT_GPU=" + kind +
                      " pip install .";
    if (*kBuiltGpu) msg += "; this build has the " + std::string(kBuiltGpu) + " backend";
    return msg + ")";
}

}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& name, int threads) {
    if (name == "cpu") return make_cpu_backend(threads);
    if (name == "cuda" || name == "hip") {
        if (name != kBuiltGpu) throw UnsupportedError(not_built(name));
#if defined(DS4KIT_HAVE_GPU)
        return make_gpu_backend();
#endif
    }
    if (name == "auto") {
#if defined(DS4KIT_HAVE_GPU)
        if (gpu_device_status() == "ok") return make_gpu_backend();
#endif
        return make_cpu_backend(threads);
    }
    throw ArgumentError("backend '" + name + "' is not one of auto, cpu, cuda, hip");
}

std::vector<std::pair<std::string, std::string>> available_backends() {
    std::vector<std::pair<std::string, std::string>> out = {{"cpu", "ok"}};
    for (const char* kind : {"cuda", "hip"}) {
        std::string status = not_built(kind);
#if defined(DS4KIT_HAVE_GPU)
        if (std::string(kind) == kBuiltGpu) status = gpu_device_status();
#endif
        out.emplace_back(kind, status);
    }
    return out;
}

DeviceLimits measure_device_limits(const std::string& kind, uint64_t array_bytes, int passes) {
    if (kind != "cuda" && kind != "hip") throw ArgumentError("device limits: '" + kind + "' is not cuda or hip");
    if (kind != kBuiltGpu) throw UnsupportedError(not_built(kind));
#if defined(DS4KIT_HAVE_GPU)
    return measure_gpu_device_limits(array_bytes, passes);
#else
    (void)array_bytes, (void)passes;
    throw UnsupportedError(not_built(kind));
#endif
}

}  // namespace ds4
