// The GPU backend's factory, in plain C++ (no CUDA/HIP types), for
// backend_registry.cpp. Only built with DS4KIT_GPU=cuda|hip (ds4core then defines
// DS4KIT_HAVE_GPU=1 and DS4KIT_GPU_KIND). The backend itself (gpu_backend.cu)
// implements every operation of the seam; a weight type it has no kernel for throws
// UnsupportedError naming the operation and tensor, never falling back to the CPU.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"

namespace ds4 {

const char* gpu_backend_kind();               // "cuda" or "hip": what this build compiled
std::string gpu_device_status();              // "ok", or why no device can be used
std::unique_ptr<Backend> make_gpu_backend();  // device 0; throws UnsupportedError(reason) without one

// Device 0's memory bandwidth (gpu_limits.cu; backend.h measure_device_limits says what).
DeviceLimits measure_gpu_device_limits(uint64_t array_bytes, int passes);

}  // namespace ds4
