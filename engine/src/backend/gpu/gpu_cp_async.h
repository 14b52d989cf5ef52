// 16-byte copies from global to shared memory that a kernel issues for a later step while it
// computes the current one (software pipelining of a GEMM's staging):
//   cp_async16(dst, src)    issue the copy (both 16-byte aligned);
//   cp_async_commit()       close the group of copies issued since the last commit;
//   cp_async_wait<N>()      wait until at most the N newest groups are in flight; the thread's
//                           older copies have landed (a block barrier after it makes every
//                           thread's copies visible to all).
// - CUDA sm_80 and later: cp.async.cg (the copy bypasses L1 and the registers);
// - DS4_CP_ASYNC_EMULATE (host simulation only): each copy is held back and lands at the latest
//   moment the PTX ISA allows, the wait that covers its group, so a kernel that reads a buffer
//   before waiting for it reads stale bytes and fails its bit check; with
//   g_cp_async_immediate set, copies land at issue instead (the earliest moment: a kernel that
//   refills a buffer other threads still read fails then);
// - elsewhere (HIP, HIP-CPU): a plain copy at issue, and the waits do nothing.
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_dequant.h"  // uint4_t

#if defined(DS4_CP_ASYNC_EMULATE)
#include <cstring>
#include <vector>
#endif

namespace ds4 {
namespace gpu {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__clang__)
#define DS4_CP_ASYNC 1
__device__ inline void cp_async16(void* dst, const void* src) {
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ inline void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#elif defined(DS4_CP_ASYNC_EMULATE)
#define DS4_CP_ASYNC 1
struct PendingCopy {
    void* dst;
    uint8_t bytes[16];
};
inline bool g_cp_async_immediate = false;
inline thread_local std::vector<std::vector<PendingCopy>> t_cp_groups;  // committed, oldest first
inline thread_local std::vector<PendingCopy> t_cp_open;                 // issued since the last commit
// The source is read at issue (global memory does not change during the kernel), the
// destination written when the copy lands.
inline void cp_async16(void* dst, const void* src) {
    if (g_cp_async_immediate) {
        std::memcpy(dst, src, 16);
        return;
    }
    PendingCopy c{dst, {}};
    std::memcpy(c.bytes, src, 16);
    t_cp_open.push_back(c);
}
inline void cp_async_commit() {
    t_cp_groups.push_back(std::move(t_cp_open));
    t_cp_open.clear();
}
template <int N>
inline void cp_async_wait() {
    while ((int)t_cp_groups.size() > N) {
        for (const PendingCopy& c : t_cp_groups.front()) std::memcpy(c.dst, c.bytes, 16);
        t_cp_groups.erase(t_cp_groups.begin());
    }
}
#else
#define DS4_CP_ASYNC 0
__device__ inline void cp_async16(void* dst, const void* src) {
    *reinterpret_cast<uint4_t*>(dst) = *reinterpret_cast<const uint4_t*>(src);
}
__device__ inline void cp_async_commit() {}
template <int N>
__device__ inline void cp_async_wait() {}
#endif

}  // namespace gpu
}  // namespace ds4
