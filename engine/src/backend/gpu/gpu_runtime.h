// Host side of the CUDA/HIP runtime, one spelling for both: DS4_GPU_RT(Malloc) is
// cudaMalloc or hipMalloc, and every call goes through DS4_GPU_CHECK, which turns a
// failure into a ds4 error naming the call, so nothing fails silently. Only for host
// code in .cu files compiled with the runtime headers (DS4_GPU_HAVE_RUNTIME): the
// device-only HIP check without ROCm never sees it.
#pragma once
#include "backend/gpu/gpu_compat.h"

#if !DS4_GPU_HAVE_RUNTIME
#error "gpu_runtime.h needs the CUDA or HIP runtime headers; guard the include with DS4_GPU_HAVE_RUNTIME"
#endif

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "common/error.h"

#if defined(__HIPCC__)
#define DS4_GPU_RT(fn) hip##fn
#define DS4_GPU_RT_PREFIX "hip"
#define DS4_GPU_KIND_NAME "hip"
using ds4_gpu_stream_t = hipStream_t;
using ds4_gpu_device_prop_t = hipDeviceProp_t;
#define ds4GpuMemcpyHostToDevice hipMemcpyHostToDevice
#define ds4GpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define ds4GpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define ds4GpuStreamNonBlocking hipStreamNonBlocking
#define ds4GpuEventDisableTiming hipEventDisableTiming
using ds4_gpu_event_t = hipEvent_t;
#if !defined(__HIP_CPU_RT__)
using ds4_gpu_graph_t = hipGraph_t;
using ds4_gpu_graph_exec_t = hipGraphExec_t;
#define ds4GpuStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#endif
#define ds4GpuHostAlloc(p, n) hipHostMalloc(p, n)
#define ds4GpuHostFree(p) hipHostFree(p)
#define ds4GpuErrorInvalidValue hipErrorInvalidValue
#define ds4GpuErrorInvalidDevicePointer hipErrorInvalidDevicePointer
#define ds4GpuErrorInvalidConfiguration hipErrorInvalidConfiguration
#define ds4GpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#else
#include <cuda_runtime.h>
#define DS4_GPU_RT(fn) cuda##fn
#define DS4_GPU_RT_PREFIX "cuda"
#define DS4_GPU_KIND_NAME "cuda"
using ds4_gpu_stream_t = cudaStream_t;
using ds4_gpu_device_prop_t = cudaDeviceProp;
#define ds4GpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define ds4GpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define ds4GpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define ds4GpuStreamNonBlocking cudaStreamNonBlocking
#define ds4GpuEventDisableTiming cudaEventDisableTiming
using ds4_gpu_event_t = cudaEvent_t;
using ds4_gpu_graph_t = cudaGraph_t;
using ds4_gpu_graph_exec_t = cudaGraphExec_t;
#define ds4GpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define ds4GpuHostAlloc(p, n) cudaMallocHost(p, n)
#define ds4GpuHostFree(p) cudaFreeHost(p)
#define ds4GpuErrorInvalidValue cudaErrorInvalidValue
#define ds4GpuErrorInvalidDevicePointer cudaErrorInvalidDevicePointer
#define ds4GpuErrorInvalidConfiguration cudaErrorInvalidConfiguration
#define ds4GpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#endif

// Stream capture and graph replay (step graphs, gpu_backend.cu): CUDA and HIP; the HIP-CPU test
// runtime has none, so there every step runs its calls as they are issued.
#if defined(__HIP_CPU_RT__)
#define DS4_GPU_GRAPHS 0
#else
#define DS4_GPU_GRAPHS 1
#endif

using ds4_gpu_error_t = DS4_GPU_RT(Error_t);
// The prefix of every message: "gpu backend (cuda): ...".
#define DS4_GPU_WHO "gpu backend (" DS4_GPU_KIND_NAME ")"

namespace ds4 {

// "cudaMalloc(1024 bytes): out of memory (cudaErrorMemoryAllocation)".
inline std::string gpu_error_text(ds4_gpu_error_t rc, const char* call, const std::string& what) {
    std::string msg = std::string(call);
    if (!what.empty()) msg += "(" + what + ")";
    msg += ": ";
    msg += DS4_GPU_RT(GetErrorString)(rc);
    msg += " (";
    msg += DS4_GPU_RT(GetErrorName)(rc);
    msg += ")";
    return msg;
}

// Throws for any status but success: ArgumentError where the call's arguments were at
// fault, UnsupportedError otherwise (no device, driver, out of memory, a kernel fault).
inline void gpu_check(ds4_gpu_error_t rc, const char* call, const std::string& what = std::string()) {
    if (rc == DS4_GPU_RT(Success)) return;
    (void)DS4_GPU_RT(GetLastError)();  // clear it, so the next launch check does not report it again
    const std::string msg = DS4_GPU_WHO ": " + gpu_error_text(rc, call, what);
    if (rc == ds4GpuErrorInvalidValue || rc == ds4GpuErrorInvalidDevicePointer ||
        rc == ds4GpuErrorInvalidConfiguration) {
        throw ArgumentError(msg);
    }
    throw UnsupportedError(msg);
}

// Which of `choices` the override variable `var` names (the kernel-choice switches such as
// DS4KIT_GPU_WIDE_ROWS): 0, the first choice ("auto"), when it is unset or empty; any other
// value is an ArgumentError naming the variable and its choices.
inline int env_choice(const char* var, std::initializer_list<const char*> choices) {
    const char* v = std::getenv(var);
    if (!v || !*v) return 0;
    int i = 0;
    std::string expected;
    for (const char* c : choices) {
        if (std::strcmp(v, c) == 0) return i;
        expected += (i ? (i + 1 == (int)choices.size() ? " or " : ", ") : "") + std::string(c);
        ++i;
    }
    throw ArgumentError(DS4_GPU_WHO ": " + std::string(var) + " is '" + v + "'; expected " + expected);
}

}  // namespace ds4

// DS4_GPU_CHECK(Malloc, &p, n) calls cudaMalloc / hipMalloc and throws naming it.
#define DS4_GPU_CHECK(fn, ...) ::ds4::gpu_check(DS4_GPU_RT(fn)(__VA_ARGS__), DS4_GPU_RT_PREFIX #fn)
// After a kernel launch: a bad launch configuration or an earlier asynchronous fault.
#define DS4_GPU_CHECK_LAUNCH(kernel_name) \
    ::ds4::gpu_check(DS4_GPU_RT(GetLastError)(), DS4_GPU_RT_PREFIX "LaunchKernel", kernel_name)
