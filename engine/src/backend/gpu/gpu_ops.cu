// Element-wise and per-token operations of the GPU backend, one source for CUDA and HIP:
// embed, rope_tail, the FP8 KV and indexer roundings, hc_post, hc_mean, route, fill.
// Each token (row) is computed on its own with the CPU backend's formula and order
// (backend/cpu/*.cpp), in double where the CPU uses double; the bit-defining scalar code
// (F16, FP8/FP4 round trips, Hadamard, RoPE angles) is core/numerics.h itself.
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"
#include "backend/gpu/gpu_step_pos.h"
#include "backend/gpu/gpu_dot.h"

#include <stdint.h>

namespace {
[[maybe_unused]] constexpr int kThreads = 128;  // the launchers' block size (unused in the device pass)
constexpr int kMaxIdxDim = 1024;  // indexer row length one block transforms in shared memory
constexpr int64_t kRopeRows = 8;  // rows of a token one rope_tail block rotates
constexpr double kMoeWeightSumFloor = 6.103515625e-5;  // as cpu_route.cpp
constexpr int kRouteMaxExperts = 2048;  // biased routing scores one block holds (the launcher checks)
constexpr int kRouteMaxUsed = 256;      // experts a token uses that one block holds (the launcher checks)
[[maybe_unused]] constexpr int kRouteThreads = 256;
}  // namespace

// Block i: token i's row of the table into its n_copies streams (fault 1: id out of range).
template <uint32_t TYPE>
__global__ void ds4_embed_kernel(const uint8_t* table, uint64_t row_bytes, int64_t n_table, int64_t E,
                                 const int32_t* tokens, int64_t n_copies, float* X, const uint64_t* grid, int* fault) {
    ds4_kernel_entry();
    const int64_t i = ds4_block_x();
    const int32_t tok = tokens[i];
    if (tok < 0 || tok >= n_table) {
        if (ds4_thread_x() == 0) *fault = 1;
        return;
    }
    const uint8_t* row = table + (uint64_t)tok * row_bytes;
    float* Xi = X + i * n_copies * E;
    const int64_t n_chunks = (E + ds4::gpu::kChunk - 1) / ds4::gpu::kChunk;
    for (int64_t k = ds4_thread_x(); k < n_chunks; k += ds4_block_dim_x()) {
        float w[ds4::gpu::kChunk];
        const float d = ds4::gpu::load_chunk<TYPE>(row, k, E, grid, w);
        for (int j = 0; j < ds4::gpu::kChunk && k * ds4::gpu::kChunk + j < E; ++j) {
            const float v = w[j] * d;  // d * q as the CPU's dequantisers (exact for d = 1)
            for (int64_t h = 0; h < n_copies; ++h) Xi[h * E + k * ds4::gpu::kChunk + j] = v;
        }
    }
}
#define DS4_EMBED_INSTANCE(T)                                                                                     \
    template __global__ void ds4_embed_kernel<T>(const uint8_t*, uint64_t, int64_t, int64_t, const int32_t*, int64_t, \
                                                 float*, const uint64_t*, int*);
DS4_GPU_FOR_EACH_TYPE(DS4_EMBED_INSTANCE)

// Block (i, g): rows g * kRopeRows .. of token i (the angles once per block; 64 query heads on
// one block had kept it busy with their pairs long after the angles).
extern "C" __global__ void ds4_rope_tail_kernel(float* x, int64_t rows_per_token, int64_t row_len,
                                                ds4::gpu::StepPos pos0, ds4::RopeSpec spec, int inverse) {
    ds4_kernel_entry();
    __shared__ double cs[ds4::gpu::kRopeShared];
    const int64_t i = ds4_block_x(), r0 = (int64_t)ds4_block_y() * kRopeRows;
    const int64_t rows = rows_per_token - r0 < kRopeRows ? rows_per_token - r0 : kRopeRows;
    ds4::gpu::rope_cos_sin_block((double)(ds4::gpu::pos_of(pos0) + i), spec, cs);
    const int64_t half = spec.n_rot / 2;
    for (int64_t k = ds4_thread_x(); k < rows * half; k += ds4_block_dim_x()) {
        float* row = x + (i * rows_per_token + r0 + k / half) * row_len;
        ds4::gpu::rope_pair(row, row_len, spec.n_rot, cs, k % half, inverse != 0);
    }
}

// Block (r, b): 64-value block b of the first n - n_rot values of row r, a thread per value:
// the block's amax (order-free) from shared memory, then each value rounded on its own
// (core/numerics.h fp8_e4m3_round_trip, split into its two steps).
extern "C" __global__ void ds4_fp8_kv_kernel(float* x, int64_t n_rows, int64_t n, int64_t n_rot) {
    ds4_kernel_entry();
    __shared__ float v[64];
    const int64_t m = n - n_rot, per_row = (m + 63) / 64;
    const int64_t r = ds4_block_x() / per_row, off = (ds4_block_x() % per_row) * 64;
    const int t = (int)ds4_thread_x();
    const int len = m - off < 64 ? (int)(m - off) : 64;
    float* p = x + r * n + off;
    if (t < len) v[t] = p[t];
    ds4_sync_block();
    constexpr ds4::BlockRounding fp8 = ds4::fp8_e4m3_rounding();
    static_assert(fp8.block == 64, "a block of 64 threads per rounding block");
    double amax = 0.0;
    for (int i = 0; i < len; ++i) amax = ds4::num::max_f64(amax, (double)ds4::num::abs_f32(v[i]));
    const double s = ds4::num::pow2_scale(ds4::num::max_f64(amax, fp8.amax_floor), fp8.top);
    if (t < len) p[t] = ds4::num::round_trip_value(v[t], s, fp8.top, fp8.e4m3);
}

// Block r (kThreads threads): Hadamard of row r in double (gpu_math.h hadamard_block), then FP4
// per 32, a thread per value (gpu_math.h block_round_trip_block).
extern "C" __global__ void ds4_indexer_transform_kernel(float* x, int64_t d, int fp4) {
    ds4_kernel_entry();
    __shared__ double tmp[kMaxIdxDim];
    __shared__ float vals[kMaxIdxDim];
    float* row = x + (int64_t)ds4_block_x() * d;
    const int t = (int)ds4_thread_x(), T = (int)ds4_block_dim_x();
    for (int64_t i = t; i < d; i += T) tmp[i] = row[i];
    ds4::gpu::hadamard_block(tmp, d);
    for (int64_t i = t; i < d; i += T) vals[i] = (float)tmp[i];
    if (fp4) ds4::gpu::block_round_trip_block<kMaxIdxDim / kThreads>(vals, d, ds4::fp4_e2m1_rounding());
    ds4_sync_block();
    for (int64_t i = t; i < d; i += T) row[i] = vals[i];
}

// One thread per (token, stream j, element): X_out_j = post_j y + sum_r M[r][j] X_r (double).
extern "C" __global__ void ds4_hc_post_kernel(const float* y, const float* X, int64_t n_tokens, int64_t n_hc,
                                              int64_t E, const double* split, float* X_out) {
    ds4_kernel_entry();
    const int64_t k = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (k >= n_tokens * n_hc * E) return;
    const int64_t t = k / (n_hc * E), j = (k / E) % n_hc, i = k % E;
    const int64_t SS = 2 * n_hc + n_hc * n_hc;
    const double* post = split + t * SS + n_hc;
    const double* M = split + t * SS + 2 * n_hc;
    const float* Xt = X + t * n_hc * E;
    double acc = post[j] * (double)y[t * E + i];
    for (int64_t r = 0; r < n_hc; ++r) acc += M[r * n_hc + j] * (double)Xt[r * E + i];
    X_out[k] = (float)acc;
}

// One thread per (token, element): the mean of the streams, summed in h order in double.
extern "C" __global__ void ds4_hc_mean_kernel(const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, float* out,
                                              int64_t ldo) {
    ds4_kernel_entry();
    const int64_t k = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (k >= n_tokens * E) return;
    const int64_t t = k / E, i = k % E;
    double acc = 0.0;
    for (int64_t h = 0; h < n_hc; ++h) acc += (double)X[(t * n_hc + h) * E + i];
    out[t * ldo + i] = (float)(acc / (double)n_hc);
}

// The step position word (gpu_step_pos.h): a kernel, so it is ordered with the stream and
// needs no host buffer that must outlive the call.
extern "C" __global__ void ds4_set_pos_kernel(int64_t* word, int64_t v) { ds4_kernel_entry(); *word = v; }

extern "C" __global__ void ds4_fill_kernel(float* x, int64_t n, float v) {
    ds4_kernel_entry();
    const int64_t k = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (k < n) x[k] = v;
}

namespace {
__device__ inline double route_score(float logit) {
    const double x = logit;
    const double sp = ds4::num::max_f64(x, 0.0) + ::log1p(::exp(-ds4::num::abs_f64(x)));  // softplus
    return ds4::num::sqrt_f64(sp);
}
}  // namespace

// Block i: token i (cpu_route.cpp): s = sqrt(softplus(logit)); hash rows or the top K of
// s + bias, k-th best first (ties: lower id first, as the CPU's partial_sort comparator
// orders them); weights s / max(sum, floor) * scale. The biased choice is parallel: each
// thread scores experts into shared memory, then an expert's place is its rank, the number of
// experts that beat it (a larger value, or an equal one with a lower id). The chosen ids and
// their scores stay in shared memory, a thread each, so the weights need no chain of global
// loads (one thread reading each id back, then its logit, had taken most of the kernel's
// 7-10 us on the H200). Fault 2: a token id outside the hash table (nothing written). A
// hash row's id outside 0..NX-1 scores 0 here; moe's plan reports it (fault 3).
extern "C" __global__ void ds4_route_kernel(const float* logits, const int32_t* tokens, int64_t n, int64_t NX,
                                            int64_t K, const int32_t* hash, int64_t hash_rows, int64_t hash_stride,
                                            const float* bias, int normalise, double scale, int32_t* experts,
                                            float* weights, int* fault) {
    ds4_kernel_entry();
    __shared__ double v[kRouteMaxExperts];
    __shared__ int32_t sel[kRouteMaxUsed];
    __shared__ double chosen_score[kRouteMaxUsed];
    __shared__ double norm;
    const int64_t i = ds4_block_x();
    const int t = (int)ds4_thread_x(), T = (int)ds4_block_dim_x();
    const float* gl = logits + i * NX;
    if (hash) {
        const int32_t tok = tokens[i];
        if (tok < 0 || tok >= hash_rows) {  // the whole block returns
            if (t == 0) *fault = 2;
            return;
        }
        for (int64_t k = t; k < K; k += T) sel[k] = hash[(int64_t)tok * hash_stride + k];
    } else {
        for (int64_t e = t; e < NX; e += T) v[e] = route_score(gl[e]) + (double)bias[e];
        ds4_sync_block();
        for (int64_t e = t; e < NX; e += T) {
            const double ve = v[e];
            int rank = 0;  // a count without an early exit: the shared-memory loads overlap
#pragma unroll 8
            for (int o = 0; o < (int)NX; ++o) rank += (v[o] > ve || (v[o] == ve && o < e)) ? 1 : 0;
            if (rank < K) sel[rank] = (int32_t)e;
        }
    }
    ds4_sync_block();
    for (int64_t k = t; k < K; k += T) {
        const int32_t e = sel[k];
        chosen_score[k] = e >= 0 && e < NX ? route_score(gl[e]) : 0.0;
        experts[i * K + k] = e;
    }
    ds4_sync_block();
    if (t == 0) {
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k) sum += chosen_score[k];
        norm = normalise ? 1.0 / ds4::num::max_f64(sum, kMoeWeightSumFloor) : 1.0;
    }
    ds4_sync_block();
    for (int64_t k = t; k < K; k += T) weights[i * K + k] = (float)(chosen_score[k] * norm * scale);
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {
unsigned blocks_for(int64_t n, int64_t per, const char* what) {
    const int64_t b = (n + per - 1) / per;
    if (b > 0x7fffffff) throw ArgumentError(DS4_GPU_WHO ": " + std::string(what) + " of " + std::to_string(n) +
                                            " elements exceeds the launch grid");
    return (unsigned)b;
}
}  // namespace

void launch_embed(uint32_t type, const uint8_t* table, uint64_t row_bytes, int64_t n_table, int64_t E,
                  const int32_t* tokens, int64_t n, int64_t n_copies, float* X, const uint64_t* grid, int* fault,
                  void* s) {
    if (n <= 0) return;
    switch (type) {
#define DS4_CASE(T)                                                                                            \
    case T:                                                                                                    \
        ds4_launch(ds4_embed_kernel<T>, dim3((unsigned)n), dim3(kThreads), s, table, row_bytes, n_table, E, tokens, \
                   n_copies, X, grid, fault);                                                                   \
        break;
        DS4_GPU_FOR_EACH_TYPE(DS4_CASE)
#undef DS4_CASE
        default: throw UnsupportedError(DS4_GPU_WHO ": embed has no kernel for ggml type " + std::to_string(type));
    }
    DS4_GPU_CHECK_LAUNCH("ds4_embed_kernel");
}

void launch_rope_tail(float* x, int64_t n_tokens, int64_t rows_per_token, int64_t row_len, StepPos pos0,
                      const RopeSpec& spec, bool inverse, void* s) {
    if (n_tokens <= 0 || spec.n_rot <= 0 || rows_per_token <= 0) return;
    const int64_t groups = (rows_per_token + kRopeRows - 1) / kRopeRows;
    if (n_tokens > 0x7fffffff || groups > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": rope_tail of " + std::to_string(n_tokens) + " tokens x " +
                            std::to_string(rows_per_token) + " rows exceeds the launch grid");
    }
    ds4_launch(ds4_rope_tail_kernel, dim3((unsigned)n_tokens, (unsigned)groups), dim3(kThreads), s, x, rows_per_token,
               row_len, pos0, spec, inverse ? 1 : 0);
    DS4_GPU_CHECK_LAUNCH("ds4_rope_tail_kernel");
}

void launch_fp8_kv_round_trip(float* x, int64_t n_rows, int64_t n, int64_t n_rot, void* s) {
    const int64_t work = n_rows * ((n - n_rot + 63) / 64);
    if (work <= 0) return;
    ds4_launch(ds4_fp8_kv_kernel, dim3(blocks_for(work, 1, "fp8_kv_round_trip")), dim3(64), s, x, n_rows, n, n_rot);
    DS4_GPU_CHECK_LAUNCH("ds4_fp8_kv_kernel");
}

void launch_indexer_transform(float* x, int64_t n_rows, int64_t d, bool fp4, void* s) {
    if (n_rows <= 0) return;
    if (d > kMaxIdxDim || (d & (d - 1)) != 0 || (fp4 && d % 32 != 0)) {
        throw ArgumentError(DS4_GPU_WHO ": indexer_transform: row length " + std::to_string(d) +
                            " (needs a power of two <= " + std::to_string(kMaxIdxDim) + ", a multiple of 32 with FP4)");
    }
    ds4_launch(ds4_indexer_transform_kernel, dim3((unsigned)n_rows), dim3(kThreads), s, x, d, fp4 ? 1 : 0);
    DS4_GPU_CHECK_LAUNCH("ds4_indexer_transform_kernel");
}

void launch_hc_post(const float* y, const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, const double* split,
                    float* X_out, void* s) {
    const int64_t work = n_tokens * n_hc * E;
    if (work <= 0) return;
    ds4_launch(ds4_hc_post_kernel, dim3(blocks_for(work, kThreads, "hc_post")), dim3(kThreads), s, y, X, n_tokens, n_hc,
               E, split, X_out);
    DS4_GPU_CHECK_LAUNCH("ds4_hc_post_kernel");
}

void launch_hc_mean(const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, float* out, int64_t ldo, void* s) {
    const int64_t work = n_tokens * E;
    if (work <= 0) return;
    ds4_launch(ds4_hc_mean_kernel, dim3(blocks_for(work, kThreads, "hc_mean")), dim3(kThreads), s, X, n_tokens, n_hc, E,
               out, ldo);
    DS4_GPU_CHECK_LAUNCH("ds4_hc_mean_kernel");
}

void launch_fill(float* x, int64_t n, float v, void* s) {
    if (n <= 0) return;
    ds4_launch(ds4_fill_kernel, dim3(blocks_for(n, 256, "fill")), dim3(256), s, x, n, v);
    DS4_GPU_CHECK_LAUNCH("ds4_fill_kernel");
}

void launch_set_pos(int64_t* word, int64_t p, void* s) {
    ds4_launch(ds4_set_pos_kernel, dim3(1), dim3(1), s, word, p);
    DS4_GPU_CHECK_LAUNCH("ds4_set_pos_kernel");
}

void launch_route(const float* logits, const int32_t* tokens, int64_t n, int64_t n_expert, int64_t K,
                  const int32_t* hash, int64_t hash_rows, int64_t hash_stride, const float* bias, bool normalise,
                  double scale, int32_t* experts, float* weights, int* fault, void* s) {
    if (n <= 0) return;
    if (K > kRouteMaxUsed) {
        throw UnsupportedError(DS4_GPU_WHO ": route: " + std::to_string(K) + " experts a token; the kernel holds at most " +
                               std::to_string(kRouteMaxUsed));
    }
    if (!hash && n_expert > kRouteMaxExperts) {
        throw UnsupportedError(DS4_GPU_WHO ": route: " + std::to_string(n_expert) + " experts; the kernel scores at most " +
                               std::to_string(kRouteMaxExperts));
    }
    ds4_launch(ds4_route_kernel, dim3(blocks_for(n, 1, "route")), dim3(kRouteThreads), s, logits, tokens, n, n_expert, K,
               hash, hash_rows, hash_stride, bias, normalise ? 1 : 0, scale, experts, weights, fault);
    DS4_GPU_CHECK_LAUNCH("ds4_route_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
