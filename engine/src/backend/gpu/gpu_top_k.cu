// Backend::row_top_k on the GPU: a block per row, k rounds; round j takes the largest element
// (core/top_k.h's rank words: value, then the lower index) below round j - 1's, each thread over
// its strided elements, then a max over the block's threads. O(k * n / 256) loads a row: a
// 129280-entry row of logits is 505 loads a thread per round, from L2 after the first.
// The result is defined by the order alone, so it is the CPU's bit for bit.
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_tree.h"
#include "core/top_k.h"

#include <stdint.h>

namespace {
constexpr int kThreads = 256;

struct MaxWord {
    __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a > b ? a : b; }
};

extern "C" __global__ void ds4_row_top_k_kernel(const float* x, int64_t n, int64_t k, int32_t* ids, float* vals) {
    ds4_kernel_entry();
    __shared__ uint64_t best[kThreads];
    const int64_t r = ds4_block_x();
    const int t = (int)ds4_thread_x();
    const float* row = x + r * n;
    uint64_t below = ~0ull;  // above every rank word (+inf's key is 0xff800000; NaN's is 0)
    for (int64_t j = 0; j < k; ++j) {
        uint64_t mine = 0;
        for (int64_t i = t; i < n; i += kThreads) {
            const uint64_t w = ds4::rank_word(row[i], i);
            if (w < below && w > mine) mine = w;
        }
        best[t] = mine;
        ds4::gpu::tree_reduce<1>(best, kThreads, 0, t, kThreads, MaxWord());
        below = best[0];
        if (t == 0) {
            const int64_t i = ds4::rank_word_index(below);
            ids[r * k + j] = (int32_t)i;
            vals[r * k + j] = row[i];
        }
        ds4_sync_block();  // best[0] is read before the next round overwrites it
    }
}
}  // namespace

#if DS4_GPU_HOST_CODE
#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

void launch_row_top_k(const float* x, int64_t n_rows, int64_t n, int64_t k, int32_t* ids, float* vals, void* s) {
    if (n_rows <= 0) return;
    if (n_rows > 0x7fffffff) throw ArgumentError(DS4_GPU_WHO ": row_top_k: too many rows for the launch grid");
    ds4_launch(ds4_row_top_k_kernel, dim3((unsigned)n_rows), dim3(kThreads), s, x, n, k, ids, vals);
    DS4_GPU_CHECK_LAUNCH("ds4_row_top_k_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
