// Backend::attention_inputs on the GPU: a step's queries and KV rows made ready for attention in
// one launch, where the seam's calls take six (rms_norm of the query heads and of the KV row,
// rope_tail of each, the FP8 round trip, kv_store). Each of those small kernels is a few
// microseconds of dependent loads and stores on the main stream of every layer; here each row's
// block does its whole chain with the row in shared memory.
//
// Block (i, h) of kNormThreads threads: token i's query head h (h < n_head) or its KV row
// (h == n_head). Every step is the standalone kernel's arithmetic, so the bits are the six
// calls' (tests/gpu_host_sim/attention_inputs_sim.cpp holds them to it):
//   - the norm: gpu_rms.h (thread t's squares of x[t], x[t + kNormThreads], ..., the fixed tree);
//   - RoPE: rope_cos_sin_block and rope_pair (gpu_math.h), as rope_tail;
//   - the FP8 round trip of the values before the rotated tail: gpu_math.h block_round_trip_block
//     (per block of 64, the amax, order-free, then each value rounded on its own), as
//     ds4_fp8_kv_kernel;
//   - the store: F16 of the final value into ring slot (p0 + i) % ring_rows, as ds4_kv_store_kernel.
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"  // before gpu_rms.h: core/numerics.h needs its device libm
#include "backend/gpu/gpu_rms.h"
#include "backend/gpu/gpu_step_pos.h"

#include <stdint.h>

namespace {
using ds4::gpu::kNormThreads;
constexpr int kMaxRowLen = 1024;  // values of a row the block holds in shared memory (the launcher checks)
static_assert(kMaxRowLen % kNormThreads == 0, "whole values a thread for the FP8 rounding");
}  // namespace

extern "C" __global__ void DS4_NORM_BOUNDS ds4_attention_inputs_kernel(float* Q, int64_t n_head, float* kv,
                                                                        const float* kv_norm, int64_t D, double eps,
                                                                        ds4::gpu::StepPos pos0, ds4::RopeSpec spec,
                                                                        int64_t fp8_len, int64_t ring_rows,
                                                                        uint16_t* ring) {
    ds4_kernel_entry();
    __shared__ double part[kNormThreads];
    __shared__ double scale;
    __shared__ double cs[ds4::gpu::kRopeShared];
    __shared__ float row[kMaxRowLen];
    const int t = (int)ds4_thread_x();
    const int64_t i = ds4_block_x(), h = ds4_block_y();
    const bool is_kv = h == n_head;
    float* x = is_kv ? kv + i * D : Q + (i * n_head + h) * D;
    const float* w = is_kv ? kv_norm : nullptr;

    double ss = 0.0;
    for (int64_t j = t; j < D; j += kNormThreads) ss = ds4::gpu::rms_add_square(ss, x[j]);
    const double s = ds4::gpu::rms_block_scale(ss, t, D, eps, part, &scale);
    for (int64_t j = t; j < D; j += kNormThreads) row[j] = ds4::gpu::rms_scaled(x[j], s, w ? (double)w[j] : 1.0);
    const int64_t p = ds4::gpu::pos_of(pos0) + i;
    ds4::gpu::rope_cos_sin_block((double)p, spec, cs);  // ends with a barrier: row is written
    for (int64_t k = t; k < spec.n_rot / 2; k += kNormThreads) ds4::gpu::rope_pair(row, D, spec.n_rot, cs, k, false);
    ds4_sync_block();
    // The KV row's FP8 round trip of its first fp8_len values (a uniform branch: the whole block).
    if (is_kv) ds4::gpu::block_round_trip_block<kMaxRowLen / kNormThreads>(row, fp8_len, ds4::fp8_e4m3_rounding());

    for (int64_t j = t; j < D; j += kNormThreads) {
        const float v = row[j];
        x[j] = v;
        if (is_kv) ring[(p % ring_rows) * D + j] = ds4::f32_to_f16(v);
    }
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

int64_t attention_inputs_max_row() { return kMaxRowLen; }

void launch_attention_inputs(float* Q, int64_t n, int64_t n_head, float* kv, const float* kv_norm, int64_t D,
                             double eps, StepPos pos0, const RopeSpec& spec, int64_t fp8_len, int64_t ring_rows,
                             uint16_t* ring, void* stream) {
    if (n <= 0) return;
    if (D > kMaxRowLen || spec.n_rot > D || spec.n_rot > kMaxRotHost || fp8_len < 0 || fp8_len > D) {
        throw ArgumentError(DS4_GPU_WHO ": attention_inputs: rows of " + std::to_string(D) + " values, " +
                            std::to_string(spec.n_rot) + " rotated, " + std::to_string(fp8_len) +
                            " FP8-rounded (the kernel holds rows of up to " + std::to_string(kMaxRowLen) + ")");
    }
    if (n > 0x7fffffff || n_head + 1 > 0xffff) {
        throw ArgumentError(DS4_GPU_WHO ": attention_inputs of " + std::to_string(n) + " tokens x " +
                            std::to_string(n_head) + " heads exceeds the launch grid");
    }
    ds4_launch(ds4_attention_inputs_kernel, dim3((unsigned)n, (unsigned)(n_head + 1)), dim3(kNormThreads), stream, Q,
               n_head, kv, kv_norm, D, eps, pos0, spec, fp8_len, ring_rows, ring);
    DS4_GPU_CHECK_LAUNCH("ds4_attention_inputs_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
