// Hyper-connection kernels of the GPU backend (cpu_hc.cpp's per-token part).
//
// The mix logits m = fn . N(flatten X) without the normalised copy of X: hc_mix_partial
// splits the F = n_hc * E inputs into slices of kMixSlice and a block per (slice, token) writes
// each row's dot with the raw X over its slice and the slice's sum of squares; a consumer
// adds the slices in order and scales, m_r = (sum_s dot_rs) / sqrt(sum_s ss_s / F + eps).
// (The CPU normalises first and then multiplies; the two differ by float rounding only.)
// A 24-row mix matrix had been a 24-block matmul behind a one-block rms_norm.
//
// hc_collapse, blocks (token, slice of kSlice of E): w_h = sigmoid(scale0 m_h + base_h) + eps
// from the first n_hc mix values (hc_pre's pre, hc_head's weights: one formula), then
// u_k = sum_h w_h X_h[k] in h order in double. It needs no Sinkhorn.
// hc_split, a block per token: the whole split (sigmoids, Sinkhorn) in double exactly as the
// CPU writes it. Only hc_post reads the Sinkhorn's part, so the backend runs it on a second
// stream beside the attention or experts that come between (gpu_backend.cu).
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"  // before gpu_dequant.h: core/numerics.h needs its device libm
#include "backend/gpu/gpu_dot.h"
#include "backend/gpu/gpu_rms.h"
#include "backend/gpu/gpu_tree.h"

#include <stdint.h>

namespace {
constexpr int kThreads = 64;  // the launchers' block size
constexpr int64_t kSlice = 256;                 // elements of E a block collapses
constexpr int kMaxHc = 16;
static_assert(kThreads >= kMaxHc && kSlice % kThreads == 0, "hc_collapse: a thread per stream, whole slices");
constexpr int kMaxSplit = 2 * kMaxHc + kMaxHc * kMaxHc;
// Values a thread of hc_collapse_norm holds: rows of up to kNormThreads times this (8192).
constexpr int kCollapseNormPerThread = 16;
constexpr int kMixThreads = 256;                // hc_mix_partial: 32 chunk lanes x 8 row groups
constexpr int kMixLanes = 32;                   // lanes over a slice's chunks
constexpr int64_t kMixSlice = kMixLanes * ds4::gpu::kChunk;  // inputs a block covers
constexpr int kMixRowsPerThread = 4;            // rows a thread computes per pass
constexpr int kMixRowsPerPass = kMixRowsPerThread * (kMixThreads / kMixLanes);
static_assert(kMixThreads % kMixLanes == 0, "row groups of whole lane sets");

// One Sinkhorn half-step by the whole block: dst = src with every row (rows) or column of the
// n x n matrix divided by (its sum + eps), the sum in index order from 0 as cpu_hc.cpp's
// row_norm/col_norm; then a barrier. The caller alternates two buffers, so each half-step
// has one barrier (a copy back had cost a second).
__device__ void normalise_lines(const double* src, double* dst, int64_t n, double hc_eps, bool rows) {
    const int64_t t0 = ds4_thread_x(), T = ds4_block_dim_x(), nn = n * n;
    for (int64_t k = t0; k < nn; k += T) {
        const int64_t first = rows ? (k / n) * n : k % n, step = rows ? 1 : n;
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j) sum += src[first + j * step];
        dst[k] = src[k] / (sum + hc_eps);
    }
    ds4_sync_block();
}

// hc_split_from_mix (cpu_hc.cpp) by the whole block: a thread per value of the n x n matrix
// (and of pre/post), with a barrier between reading a row or column and writing it. Every
// sum is the serial one, in the same order (each thread of a row or column adds the same
// values from 0), so the split has the serial code's bits. `tmp` is shared memory of n * n
// doubles; split is shared memory too.
__device__ void hc_split_from_mix(const float* m, int64_t n, const float* scale, const float* base, int64_t iters,
                                  double hc_eps, double* split, double* tmp) {
    const int64_t t0 = ds4_thread_x(), T = ds4_block_dim_x(), nn = n * n;
    double* pre = split;
    double* post = split + n;
    double* M = split + 2 * n;
    for (int64_t i = t0; i < n; i += T) {
        pre[i] = ds4::gpu::sigmoid((double)scale[0] * m[i] + base[i]) + hc_eps;
        post[i] = 2.0 * ds4::gpu::sigmoid((double)scale[1] * m[n + i] + base[n + i]);
    }
    for (int64_t k = t0; k < nn; k += T) M[k] = (double)scale[2] * m[2 * n + k] + base[2 * n + k];
    ds4_sync_block();
    // Row softmax: tmp = exp(M - row max), then M = tmp / row sum + eps.
    for (int64_t k = t0; k < nn; k += T) {
        const int64_t r = k / n;
        double mx = -INFINITY;
        for (int64_t c = 0; c < n; ++c) mx = ds4::num::max_f64(mx, M[r * n + c]);
        tmp[k] = ::exp(M[k] - mx);
    }
    ds4_sync_block();
    for (int64_t k = t0; k < nn; k += T) {
        const int64_t r = k / n;
        double sum = 0.0;
        for (int64_t c = 0; c < n; ++c) sum += tmp[r * n + c];
        M[k] = tmp[k] / sum + hc_eps;
    }
    ds4_sync_block();
    double *cur = M, *next = tmp;
    auto half_step = [&](bool rows) {  // cur -> next, then next is the current matrix
        normalise_lines(cur, next, n, hc_eps, rows);
        double* const done = next;
        next = cur, cur = done;
    };
    for (int64_t it = 0; it < (iters > 1 ? iters : 1); ++it) {
        if (it > 0) half_step(true);  // rounds after the first: rows, then columns
        half_step(false);
    }
    if (cur != M) {
        for (int64_t k = t0; k < nn; k += T) M[k] = cur[k];
        ds4_sync_block();
    }
}

// Value i of the collapse: sum_h w_h X_h[i] in h order in double, rounded once.
__device__ inline float collapse_value(const double* w, const float* Xt, int64_t n_hc, int64_t E, int64_t i) {
    double acc = 0.0;
    for (int64_t h = 0; h < n_hc; ++h) acc += w[h] * (double)Xt[h * E + i];
    return (float)acc;
}

}  // namespace

// Block (slice s, token t): part[(t * n_mix + r) * S + s] = fn.row(r) . X_t over the slice (the
// products of a chunk of 8 by fma from 0, times the chunk's factor, then the 32 chunks in
// gpu_tree.h's tree), part_ss[t * S + s] = the slice's sum of squares in double.
template <uint32_t TYPE>
__global__ void ds4_hc_mix_partial_kernel(const uint8_t* fn, uint64_t row_bytes, int wide, int64_t F, int64_t n_mix,
                                          const float* X, int x4, const uint64_t* grid, float* part,
                                          double* part_ss) {
    ds4_kernel_entry();
    __shared__ float sums[kMixRowsPerThread * kMixThreads];
    __shared__ double ss_sums[kMixThreads];
    const int t = (int)ds4_thread_x(), lane = t % kMixLanes, rg = t / kMixLanes;
    const int64_t s = ds4_block_x(), tok = ds4_block_y(), S = (F + kMixSlice - 1) / kMixSlice;
    const int64_t e0 = s * kMixSlice + (int64_t)lane * ds4::gpu::kChunk;
    const bool live = e0 < F;
    const int len = !live ? 0 : F - e0 < ds4::gpu::kChunk ? (int)(F - e0) : ds4::gpu::kChunk;
    // A pass's weight chunks, loaded for the first pass before x: the loads of the layer's fn
    // then wait under x's rather than after the slice's sum of squares and its barriers.
    float w[kMixRowsPerThread][ds4::gpu::kChunk], d[kMixRowsPerThread];
    auto load_pass = [&](int64_t r0) {
#pragma unroll
        for (int i = 0; i < kMixRowsPerThread; ++i) {
            const int64_t r = r0 + rg * kMixRowsPerThread + i;
            for (int j = 0; j < ds4::gpu::kChunk; ++j) w[i][j] = 0.0f;
            d[i] = 0.0f;
            if (live && r < n_mix) {
                d[i] = ds4::gpu::load_chunk_wide<TYPE>(fn + r * row_bytes, e0 / ds4::gpu::kChunk, F, grid, w[i],
                                                       wide != 0);
            }
        }
    };
    load_pass(0);
    float xv[ds4::gpu::kChunk];
    const float* x = X + tok * F + (live ? e0 : 0);
    ds4::gpu::load_x8(x, len, x4 != 0 && len == ds4::gpu::kChunk, xv);
    double ss = 0.0;
    for (int j = 0; j < ds4::gpu::kChunk; ++j) ss += (double)xv[j] * (double)xv[j];  // xv is 0 past F
    ss_sums[t] = ss;
    ds4::gpu::tree_reduce<1>(ss_sums, 0, rg * kMixLanes, lane, kMixLanes);
    if (t == 0) part_ss[tok * S + s] = ss_sums[0];
    for (int64_t r0 = 0; r0 < n_mix; r0 += kMixRowsPerPass) {
        if (r0 > 0) load_pass(r0);
        float v[kMixRowsPerThread];
#pragma unroll
        for (int i = 0; i < kMixRowsPerThread; ++i) {
            const int64_t r = r0 + rg * kMixRowsPerThread + i;
            v[i] = live && r < n_mix ? d[i] * ds4::gpu::chunk_dot(w[i], xv, len) : 0.0f;
        }
        for (int i = 0; i < kMixRowsPerThread; ++i) sums[i * kMixThreads + t] = v[i];
        ds4::gpu::tree_reduce<kMixRowsPerThread>(sums, kMixThreads, rg * kMixLanes, lane, kMixLanes);
        if (lane == 0) {
            for (int i = 0; i < kMixRowsPerThread; ++i) {
                const int64_t r = r0 + rg * kMixRowsPerThread + i;
                if (r < n_mix) part[(tok * n_mix + r) * S + s] = sums[i * kMixThreads + t];
            }
        }
        ds4_sync_block();  // sums is written again by the next pass
    }
}

namespace {
// A mix value from its row's slice dots and the slices' sums of squares, each added in slice
// order: the dot with X scaled by 1 / X's RMS over its F inputs (the split's mix_value and the
// collapse's weights, which must agree bit for bit).
__device__ inline float mix_from_sums(double dot, double ss, int64_t F, double rms_eps) {
    return (float)(dot * (1.0 / ds4::num::sqrt_f64(ss / (double)F + rms_eps)));
}

// Mix value r of token tok from hc_mix_partial's S slices, the slices added in order (a row's
// slices are consecutive, and the unrolled loop keeps their loads in flight together).
__device__ inline float mix_value(const float* part, const double* part_ss, int64_t tok, int64_t S, int64_t n_mix,
                                  int64_t r, int64_t F, double rms_eps) {
    constexpr int kAhead = 16;  // slices loaded before any is added (a loop to S left one load in flight)
    const float* p = part + (tok * n_mix + r) * S;
    const double* q = part_ss + tok * S;
    double dot = 0.0, ss = 0.0;
    for (int64_t s0 = 0; s0 < S; s0 += kAhead) {
        float pv[kAhead];
        double qv[kAhead];
#pragma unroll
        for (int u = 0; u < kAhead; ++u) {
            const int64_t s = s0 + u < S ? s0 + u : S - 1;  // past the end: loaded again, not added
            pv[u] = p[s];
            qv[u] = q[s];
        }
#pragma unroll
        for (int u = 0; u < kAhead; ++u) {
            if (s0 + u < S) dot += (double)pv[u], ss += qv[u];
        }
    }
    return mix_from_sums(dot, ss, F, rms_eps);
}
}  // namespace

namespace {
// Slices of the mix's partial sums collapse_weights stages in shared memory a round.
constexpr int kWeightStage = 64;
struct WeightStage {
    float p[kMaxHc * kWeightStage];  // row h's slices s0.. at p[h * kWeightStage ..]
    double q[kWeightStage];          // the slices' sums of squares
};

// w[h] for h < n_hc from token t's first n_hc mix values: mix_value's sums (each row's slices
// added in order by thread h), with the slices' loads spread over the whole block into shared
// memory, kWeightStage slices a round: one round of loads for the model's 64 slices, where
// four threads loading their rows' slices themselves had waited on four rounds in turn.
// Ends with a barrier. w, st: shared memory.
__device__ void collapse_weights(const float* part, const double* part_ss, int64_t t, int64_t S, int64_t n_mix,
                                 double rms_eps, int64_t n_hc, int64_t E, const float* scale, const float* base,
                                 double hc_eps, double* w, WeightStage* st) {
    const int j = (int)ds4_thread_x(), T = (int)ds4_block_dim_x();
    const float* p = part + t * n_mix * S;  // row h of the token: p[h * S + s]
    const double* q = part_ss + t * S;
    double dot = 0.0, ss = 0.0;  // thread h < n_hc: row h's sums so far
    for (int64_t s0 = 0; s0 < S; s0 += kWeightStage) {
        const int64_t ns = S - s0 < kWeightStage ? S - s0 : kWeightStage;
        for (int64_t k = j; k < n_hc * ns; k += T) st->p[(k / ns) * kWeightStage + k % ns] = p[(k / ns) * S + s0 + k % ns];
        for (int64_t u = j; u < ns; u += T) st->q[u] = q[s0 + u];
        ds4_sync_block();
        if (j < n_hc) {
            for (int64_t u = 0; u < ns; ++u) dot += (double)st->p[j * kWeightStage + u], ss += st->q[u];
        }
        ds4_sync_block();  // the next round writes the stage again
    }
    if (j < n_hc) {
        const float m = mix_from_sums(dot, ss, n_hc * E, rms_eps);
        w[j] = ds4::gpu::sigmoid((double)scale[0] * m + base[j]) + hc_eps;
    }
    ds4_sync_block();
}
}  // namespace

// Blocks (token, slice of E): the weights from the first n_hc mix values, then the collapse.
// A thread's values of the first kEarlyHc streams are loaded before the weights are computed,
// so those loads wait under the weights' (DS4 has 4 streams; any more load after).
extern "C" __global__ void ds4_hc_collapse_kernel(const float* part, const double* part_ss, int64_t S, int64_t n_mix,
                                                  double rms_eps, const float* X, int64_t n_hc, int64_t E,
                                                  const float* scale, const float* base, double hc_eps, float* out) {
    ds4_kernel_entry();
    constexpr int kEarlyHc = 4, kPer = kSlice / kThreads;
    __shared__ double w[kMaxHc];
    __shared__ WeightStage st;
    const int64_t t = ds4_block_x(), i0 = (int64_t)ds4_block_y() * kSlice + ds4_thread_x();
    const float* Xt = X + t * n_hc * E;
    float xv[kEarlyHc][kPer];
#pragma unroll
    for (int h = 0; h < kEarlyHc; ++h) {
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
            const int64_t i = i0 + (int64_t)k * kThreads;
            xv[h][k] = h < n_hc && i < E ? Xt[h * E + i] : 0.0f;
        }
    }
    collapse_weights(part, part_ss, t, S, n_mix, rms_eps, n_hc, E, scale, base, hc_eps, w, &st);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
        const int64_t i = i0 + (int64_t)k * kThreads;
        if (i >= E) continue;
        double acc = 0.0;  // collapse_value's sum: in h order in double, rounded once
#pragma unroll
        for (int h = 0; h < kEarlyHc; ++h) {
            if (h < n_hc) acc += w[h] * (double)xv[h][k];
        }
        for (int64_t h = kEarlyHc; h < n_hc; ++h) acc += w[h] * (double)Xt[h * E + i];
        out[t * E + i] = (float)acc;
    }
}

// Block t, kNormThreads threads: the collapse of hc_collapse_kernel, then rms_norm_kernel's
// normalisation of it with weight nw (norm_eps), bit for bit the two kernels (gpu_rms.h):
// thread j keeps the collapsed values j, j + kNormThreads, ... in registers, in the order
// rms_norm adds their squares, so the collapsed row is never written and read back, and the
// norm's launch and its loads leave the step.
extern "C" __global__ void DS4_NORM_BOUNDS ds4_hc_collapse_norm_kernel(const float* part, const double* part_ss, int64_t S,
                                                       int64_t n_mix, double rms_eps, const float* X, int64_t n_hc,
                                                       int64_t E, const float* scale, const float* base, double hc_eps,
                                                       const float* nw, double norm_eps, float* out) {
    ds4_kernel_entry();
    constexpr int T = ds4::gpu::kNormThreads, P = kCollapseNormPerThread;
    __shared__ double w[kMaxHc];
    __shared__ WeightStage st;
    __shared__ double norm_part[T];
    __shared__ double norm_scale;
    const int j = (int)ds4_thread_x();
    const int64_t t = ds4_block_x();
    float wv[P];  // the norm's weights first: their loads wait under the mix's
#pragma unroll
    for (int k = 0; k < P; ++k) wv[k] = j + (int64_t)k * T < E ? nw[j + (int64_t)k * T] : 0.0f;
    collapse_weights(part, part_ss, t, S, n_mix, rms_eps, n_hc, E, scale, base, hc_eps, w, &st);
    const float* Xt = X + t * n_hc * E;
    float v[P] = {};
    double ss = 0.0;
#pragma unroll
    for (int k = 0; k < P; ++k) {
        const int64_t i = j + (int64_t)k * T;
        if (i < E) {
            v[k] = collapse_value(w, Xt, n_hc, E, i);
            ss = ds4::gpu::rms_add_square(ss, v[k]);
        }
    }
    const double s = ds4::gpu::rms_block_scale(ss, j, E, norm_eps, norm_part, &norm_scale);
#pragma unroll
    for (int k = 0; k < P; ++k) {
        const int64_t i = j + (int64_t)k * T;
        if (i < E) out[t * E + i] = ds4::gpu::rms_scaled(v[k], s, (double)wv[k]);
    }
}

// Block t: split[t * SS ..] = the token's pre, post and Sinkhorn matrix.
extern "C" __global__ void ds4_hc_split_kernel(const float* part, const double* part_ss, int64_t S, int64_t n_mix,
                                               double rms_eps, int64_t n_hc, int64_t E, const float* scale,
                                               const float* base, int64_t iters, double hc_eps, double* split) {
    ds4_kernel_entry();
    __shared__ float m[kMaxSplit];
    __shared__ double sp[kMaxSplit];
    __shared__ double tmp[kMaxHc * kMaxHc];
    const int64_t t = ds4_block_x(), SS = 2 * n_hc + n_hc * n_hc;
    for (int64_t r = ds4_thread_x(); r < SS; r += ds4_block_dim_x()) {
        m[r] = mix_value(part, part_ss, t, S, n_mix, r, n_hc * E, rms_eps);
    }
    ds4_sync_block();
    hc_split_from_mix(m, n_hc, scale, base, iters, hc_eps, sp, tmp);
    for (int64_t k = ds4_thread_x(); k < SS; k += ds4_block_dim_x()) split[t * SS + k] = sp[k];
}

#define DS4_HC_MIX_SIG(T)                                                                                        \
    template __global__ void ds4_hc_mix_partial_kernel<T>(const uint8_t*, uint64_t, int, int64_t, int64_t,        \
                                                          const float*, int, const uint64_t*, float*, double*);
DS4_GPU_FOR_EACH_TYPE(DS4_HC_MIX_SIG)

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

static void check_hc(int64_t n_hc, const char* op) {
    if (n_hc < 1 || n_hc > kMaxHc) {
        throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + ": " + std::to_string(n_hc) + " streams (1.." +
                            std::to_string(kMaxHc) + " supported)");
    }
}

static dim3 tokens_by_slices(int64_t E, int64_t n_tokens, const char* op) {
    const int64_t slices = (E + kSlice - 1) / kSlice;
    if (slices > 65535 || n_tokens > 0x7fffffff) {
        throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + ": " + std::to_string(n_tokens) + " tokens of " +
                            std::to_string(E) + " values exceed the launch grid");
    }
    return dim3((unsigned)n_tokens, (unsigned)(slices > 0 ? slices : 1));
}

int64_t hc_mix_slices(int64_t F) { return (F + kMixSlice - 1) / kMixSlice; }

namespace {
template <uint32_t T>
void launch_mix_partial(const uint8_t* fn, uint64_t row_bytes, int64_t F, int64_t n_mix, const float* X,
                        int64_t n_tokens, const uint64_t* grid, float* part, double* part_ss, void* s) {
    const int wide = dot_wide<T>(fn, row_bytes);
    const int x4 = dot_x_aligned(X, F);
    ds4_launch(ds4_hc_mix_partial_kernel<T>, dim3((unsigned)hc_mix_slices(F), (unsigned)n_tokens), dim3(kMixThreads), s,
               fn, row_bytes, wide, F, n_mix, X, x4, grid, part, part_ss);
    DS4_GPU_CHECK_LAUNCH("ds4_hc_mix_partial_kernel");
}
}  // namespace

void launch_hc_mix_partial(uint32_t type, const uint8_t* fn, uint64_t row_bytes, int64_t F, int64_t n_mix,
                           const float* X, int64_t n_tokens, const uint64_t* grid, float* part, double* part_ss,
                           void* s) {
    if (n_tokens <= 0) return;
    if (hc_mix_slices(F) > 0x7fffffff || n_tokens > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": hyper-connection mix of " + std::to_string(n_tokens) + " tokens of " +
                            std::to_string(F) + " values exceeds the launch grid");
    }
    switch (type) {
#define DS4_CASE(T) \
    case T: launch_mix_partial<T>(fn, row_bytes, F, n_mix, X, n_tokens, grid, part, part_ss, s); return;
        DS4_GPU_FOR_EACH_TYPE(DS4_CASE)
#undef DS4_CASE
        default:
            throw UnsupportedError(DS4_GPU_WHO ": hyper-connection mix has no kernel for ggml type " +
                                   std::to_string(type));
    }
}

void launch_hc_collapse(const float* part, const double* part_ss, int64_t n_mix, double rms_eps, const float* X,
                        int64_t n_tokens, int64_t n_hc, int64_t E, const float* scale, const float* base,
                        double hc_eps, float* out, void* s) {
    check_hc(n_hc, "hc collapse");
    if (n_tokens <= 0) return;
    ds4_launch(ds4_hc_collapse_kernel, tokens_by_slices(E, n_tokens, "hc collapse"), dim3(kThreads), s, part, part_ss,
               hc_mix_slices(n_hc * E), n_mix, rms_eps, X, n_hc, E, scale, base, hc_eps, out);
    DS4_GPU_CHECK_LAUNCH("ds4_hc_collapse_kernel");
}

int64_t hc_collapse_norm_max_values() { return (int64_t)ds4::gpu::kNormThreads * kCollapseNormPerThread; }

void launch_hc_collapse_norm(const float* part, const double* part_ss, int64_t n_mix, double rms_eps, const float* X,
                             int64_t n_tokens, int64_t n_hc, int64_t E, const float* scale, const float* base,
                             double hc_eps, const float* norm_w, double norm_eps, float* out, void* s) {
    check_hc(n_hc, "hc collapse and norm");
    if (n_tokens <= 0) return;
    if (E > hc_collapse_norm_max_values() || n_tokens > 0x7fffffff) {
        throw ArgumentError(DS4_GPU_WHO ": hc collapse and norm: " + std::to_string(n_tokens) + " tokens of " +
                            std::to_string(E) + " values (at most " + std::to_string(hc_collapse_norm_max_values()) +
                            " a token)");
    }
    ds4_launch(ds4_hc_collapse_norm_kernel, dim3((unsigned)n_tokens), dim3(ds4::gpu::kNormThreads), s, part, part_ss,
               hc_mix_slices(n_hc * E), n_mix, rms_eps, X, n_hc, E, scale, base, hc_eps, norm_w, norm_eps, out);
    DS4_GPU_CHECK_LAUNCH("ds4_hc_collapse_norm_kernel");
}

void launch_hc_split(const float* part, const double* part_ss, int64_t n_mix, double rms_eps, int64_t n_tokens,
                     int64_t n_hc, int64_t E, const float* scale, const float* base, int64_t iters, double hc_eps,
                     double* split, void* s) {
    check_hc(n_hc, "hc_pre");
    if (n_tokens <= 0) return;
    if (n_mix < 2 * n_hc + n_hc * n_hc) {
        throw ArgumentError(DS4_GPU_WHO ": hc_pre: " + std::to_string(n_mix) + " mix values, the split of " +
                            std::to_string(n_hc) + " streams needs " + std::to_string(2 * n_hc + n_hc * n_hc));
    }
    ds4_launch(ds4_hc_split_kernel, dim3((unsigned)n_tokens), dim3(kThreads), s, part, part_ss,
               hc_mix_slices(n_hc * E), n_mix, rms_eps, n_hc, E, scale, base, iters, hc_eps, split);
    DS4_GPU_CHECK_LAUNCH("ds4_hc_split_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
