// Mixture-of-experts FFN of the CPU backend (Backend::moe), in three fork-joins
// per call whatever the number of experts:
//   1. every (expert, row range) of gate and up, routed experts and the shared one,
//      with the clamped SwiGLU fused in (an item owns rows r0..r1 of both gate and
//      up for all of its expert's columns);
//   2. every (expert, row range) of down;
//   3. the per-token weighted sums, k = 0..K-1 then the shared expert.
// Bits: each gate/up/down element is one quant::matmul_rows reduction, which
// depends only on its weight row and its own column (never on the number of
// columns, the row ranges or the thread count), so the output is bit-identical
// to running the experts one by one on any number of threads.
#pragma once
#include <cstdint>

namespace ds4 {

class ThreadPool;
struct MoeWeights;

// Backend::moe's contract (backend/backend.h). Scratch belongs to the calling
// thread: no allocation per call once warm.
void cpu_moe(ThreadPool& pool, const MoeWeights& mw, const float* h, int64_t n_tokens, const int32_t* experts,
             const float* weights, int64_t n_used, double clamp, double clamp_shared, float* y);

}  // namespace ds4
