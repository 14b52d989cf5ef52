// Attention and indexer selection on the GPU over the sequence state (cpu_attention.cpp).
//
// attention: one thread block per (token, head). Key t is a window row (F16 in the ring),
// then a compressed row (F16; all visible ones or the indexer's selection), or, for
// attention_rows, row t of a float array. A group of 16 threads scores each key with the
// CPU's dot (gpu_math.h attn_dot: one of its lanes per thread, the same fmas, exact products;
// the key's loads coalesced); the max over the keys and the sink is order-free; the weights
// e_t = exp(s_t - max) are summed by thread 0 in key order after exp(sink - max), as the CPU
// (a tile of keys at a time, from shared memory); each output element is fma(e_t, k_t, o)
// over the keys in order from 0 (attn_kernels.h), divided by the sum, then rotated back.
// Nothing depends on the other tokens of the call (verify == decode).
//
// indexer_select: scores one thread per (token, row), then per token the top_k by rank
// (rows ranked by score, ties to the lower row) and written in ascending row order.
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"  // before gpu_dequant.h: core/numerics.h needs its device libm
#include "backend/gpu/gpu_dequant.h"

#include <stdint.h>

namespace {
constexpr int kThreads = 256;
constexpr int kOutPerThread = 2;  // head_dim <= kThreads * kOutPerThread (the launcher checks)
constexpr int kKeyTile = 256;     // keys whose row pointers a block holds at once
constexpr int kDotLanes = 16;     // threads that score one key (attn_dot's 16 lanes)
constexpr int kKeysPerRound = kThreads / kDotLanes;
constexpr int kLoadAhead = 8;     // keys whose values a thread loads before adding them

struct Keys {
    // Sequence-state mode (ring != null): window rows then compressed rows.
    const uint16_t* ring;
    int64_t ring_rows, n_swa;
    const uint16_t* comp;
    int64_t ratio;
    const int32_t* selected;
    int64_t top_k;
    // Rows mode: T float rows.
    const float* rows;
    int64_t T;
};

// Token i's keys, with the state's fields copied by value (a pointer to the kernel's
// parameter would put it in local memory).
struct TokenKeys {
    const uint16_t *ring, *comp;
    const int32_t* selected;
    int64_t ring_rows, top_k, i, p, w0, nwin, ncomp;
    __device__ const uint16_t* f16_row(int64_t t, int64_t D) const {
        if (t < nwin) return ring + ((w0 + t) % ring_rows) * D;
        const int64_t c = selected ? (int64_t)selected[i * top_k + (t - nwin)] : t - nwin;
        return comp + c * D;
    }
};

__device__ inline TokenKeys token_keys(const Keys& k, int64_t i, int64_t p) {
    TokenKeys tk{k.ring, k.comp, k.selected, k.ring_rows, k.top_k, i, p, 0, 0, 0};
    if (!k.ring) {
        tk.nwin = k.T;
        return tk;
    }
    tk.w0 = p - k.n_swa + 1 < 0 ? 0 : p - k.n_swa + 1;
    tk.nwin = p - tk.w0 + 1;
    if (k.ratio) {
        const int64_t visible = (p + 1) / k.ratio;
        tk.ncomp = k.selected ? (visible < k.top_k ? visible : k.top_k) : visible;
    }
    return tk;
}
}  // namespace

// The score of one key by a group of kDotLanes threads, gpu_math.h attn_dot step for step:
// lane l holds attn_dot's a[l] (elements l, l + 16, ... by fma from +0), then lane 0 combines
// the 16 sums from shared memory in attn_dot's pairs and adds the tail. `lane_sum` is the
// block's shared array; every thread calls it (it has a barrier).
template <class Key>
__device__ inline double group_attn_dot(const float* q, Key key, int64_t n, bool live, double* lane_sum) {
    const int t = (int)ds4_thread_x(), l = t % kDotLanes;
    const int64_t n16 = n - n % 16;
    double a = 0.0;
    if (live) {
#pragma unroll 8
        for (int64_t i = l; i < n16; i += 16) a = __builtin_fma((double)q[i], key(i), a);
    }
    lane_sum[t] = a;
    ds4_sync_block();
    double r = 0.0;
    if (live && l == 0) {
        const double* A = lane_sum + t;
        double s[4];
        for (int k = 0; k < 4; ++k) s[k] = (A[k] + A[4 + k]) + (A[8 + k] + A[12 + k]);
        r = (s[0] + s[1]) + (s[2] + s[3]);
        for (int64_t i = n16; i < n; ++i) r = __builtin_fma((double)q[i], key(i), r);
    }
    ds4_sync_block();  // lane_sum is reused by the next round
    return r;
}

// acc[jj] += sum over the tile's kt keys, in order, of w_k * value(row_k, j) for the thread's
// outputs j = t + jj * kThreads: both outputs at once, kLoadAhead keys' values loaded before
// their fmas so the loads overlap. Row pointers and weights are the block's shared arrays.
template <class Value>
__device__ inline void tile_outputs(const void* const* key_row, const double* key_w, int64_t kt, int64_t D,
                                    double* acc, Value value) {
    const int t = (int)ds4_thread_x();
    for (int64_t kk = 0; kk < kt; kk += kLoadAhead) {
        double v[kOutPerThread][kLoadAhead];
#pragma unroll
        for (int u = 0; u < kLoadAhead; ++u) {
            const int64_t r = kk + u < kt ? kk + u : kk;  // past the tile: a row loaded again, unused
            for (int jj = 0; jj < kOutPerThread; ++jj) {
                const int64_t j = t + (int64_t)jj * kThreads;
                v[jj][u] = value(key_row[r], j < D ? j : 0);
            }
        }
#pragma unroll
        for (int u = 0; u < kLoadAhead; ++u) {
            if (kk + u >= kt) break;
            for (int jj = 0; jj < kOutPerThread; ++jj) acc[jj] = __builtin_fma(key_w[kk + u], v[jj][u], acc[jj]);
        }
    }
}

// Block (i * n_head + h). scores: [n * n_head][ld_scores] doubles of scratch.
extern "C" __global__ void ds4_attention_kernel(Keys keys, int64_t p0, const float* Q, int64_t n_head, int64_t D,
                                                const float* sinks, ds4::RopeSpec rope, double* scores,
                                                int64_t ld_scores, float* O) {
    __shared__ double cs[ds4::gpu::kRopeShared];
    __shared__ double red[kThreads];
    __shared__ double den_s;
    __shared__ const void* key_row[kKeyTile];
    __shared__ double key_w[kKeyTile];
    const int t = (int)ds4_thread_x();
    const int64_t b = ds4_block_x(), i = b / n_head, h = b % n_head, p = p0 + i;
    const TokenKeys tk = token_keys(keys, i, p);
    const int64_t T = tk.nwin + tk.ncomp;
    const float* q = Q + (i * n_head + h) * D;
    double* s = scores + b * ld_scores;
    const double inv_sqrt_d = 1.0 / ds4::num::sqrt_f64((double)D);
    ds4::gpu::rope_cos_sin_block((double)p, rope, cs);
    // Scores: kKeysPerRound keys at a time, a group of kDotLanes threads per key.
    double mx = (double)sinks[h];
    for (int64_t k0 = 0; k0 < T; k0 += kKeysPerRound) {
        const int64_t k = k0 + t / kDotLanes;
        const bool live = k < T;
        double v;
        if (keys.ring) {
            const uint16_t* kr = live ? tk.f16_row(k, D) : nullptr;
            v = group_attn_dot(q, [kr](int64_t j) { return (double)ds4::gpu::f16_bits_to_f32(kr[j]); }, D, live, red);
        } else {
            const float* kr = keys.rows + (live ? k : 0) * D;
            v = group_attn_dot(q, [kr](int64_t j) { return (double)kr[j]; }, D, live, red);
        }
        if (live && t % kDotLanes == 0) {
            v *= inv_sqrt_d;
            s[k] = v;
            mx = ds4::num::max_f64(mx, v);
        }
    }
    red[t] = mx;
    ds4_sync_block();
    for (int st = kThreads / 2; st > 0; st >>= 1) {
        if (t < st) red[t] = ds4::num::max_f64(red[t], red[t + st]);
        ds4_sync_block();
    }
    mx = red[0];
    for (int64_t k = t; k < T; k += kThreads) s[k] = ::exp(s[k] - mx);
    if (t == 0) den_s = ::exp((double)sinks[h] - mx);  // the sink adds mass, carries no value
    ds4_sync_block();
    // o_j = sum_k e_k key_k[j] in key order from 0: keys a tile at a time, the tile's row
    // pointers and weights in shared memory, each thread's kOutPerThread outputs in registers.
    float* o = O + (i * n_head + h) * D;
    double acc[kOutPerThread];
    for (int jj = 0; jj < kOutPerThread; ++jj) acc[jj] = 0.0;
    for (int64_t k0 = 0; k0 < T; k0 += kKeyTile) {
        const int64_t kt = T - k0 < kKeyTile ? T - k0 : kKeyTile;
        for (int64_t kk = t; kk < kt; kk += kThreads) {
            key_row[kk] = keys.ring ? (const void*)tk.f16_row(k0 + kk, D) : (const void*)(keys.rows + (k0 + kk) * D);
            key_w[kk] = s[k0 + kk];
        }
        ds4_sync_block();
        if (t == 0) {  // the denominator in key order, from shared memory
            double den = den_s;
            for (int64_t kk = 0; kk < kt; ++kk) den += key_w[kk];
            den_s = den;
        }
        if (keys.ring) {
            tile_outputs(key_row, key_w, kt, D, acc, [](const void* row, int64_t j) {
                return (double)ds4::gpu::f16_bits_to_f32(((const uint16_t*)row)[j]);
            });
        } else {
            tile_outputs(key_row, key_w, kt, D, acc,
                         [](const void* row, int64_t j) { return (double)((const float*)row)[j]; });
        }
        ds4_sync_block();
    }
    for (int jj = 0; jj < kOutPerThread; ++jj) {
        const int64_t j = t + (int64_t)jj * kThreads;
        if (j < D) o[j] = (float)(acc[jj] / den_s);
    }
    ds4_sync_block();
    for (int64_t pi = t; pi < rope.n_rot / 2; pi += kThreads) ds4::gpu::rope_pair(o, D, rope.n_rot, cs, pi, true);
}

// One thread per (token i, row c) of the rows token i sees, when it sees more than top_k.
extern "C" __global__ void ds4_indexer_scores_kernel(const uint16_t* idx_rows, int64_t p0, const float* q,
                                                     const float* w, int64_t n, int64_t n_head, int64_t d,
                                                     int64_t top_k, double* scores, int64_t ld) {
    const int64_t i = ds4_block_y();
    const int64_t c = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    const int64_t n_c = (p0 + i + 1) / 4;
    if (i >= n || n_c <= top_k || c >= n_c) return;
    const uint16_t* row = idx_rows + c * d;
    double acc = 0.0;
    for (int64_t h = 0; h < n_head; ++h) {
        const double dot = ds4::gpu::attn_dot(q + (i * n_head + h) * d,
                                              [row](int64_t j) { return (double)ds4::f16_to_f32(row[j]); }, d);
        acc += (double)w[i * n_head + h] * ds4::num::max_f64(dot, 0.0);
    }
    scores[i * ld + c] = acc;
}

// Block i: selected[i * top_k ..] = the top_k rows (score descending, ties: lower row) in
// ascending order, or every visible row when there are at most top_k. flags: [n][ld] ints.
extern "C" __global__ void ds4_indexer_topk_kernel(int64_t p0, int64_t top_k, const double* scores, int32_t* flags,
                                                   int64_t ld, int32_t* selected) {
    const int64_t i = ds4_block_x();
    const int64_t n_c = (p0 + i + 1) / 4;
    const int t = (int)ds4_thread_x();
    int32_t* sel = selected + i * top_k;
    if (n_c <= top_k) {
        for (int64_t c = t; c < n_c; c += kThreads) sel[c] = (int32_t)c;
        return;
    }
    const double* s = scores + i * ld;
    int32_t* f = flags + i * ld;
    for (int64_t c = t; c < n_c; c += kThreads) {
        int64_t rank = 0;
        const double v = s[c];
        for (int64_t o = 0; o < n_c && rank < top_k; ++o) rank += (s[o] > v || (s[o] == v && o < c)) ? 1 : 0;
        f[c] = rank < top_k ? 1 : 0;
    }
    ds4_sync_block();
    if (t == 0) {
        int64_t k = 0;
        for (int64_t c = 0; c < n_c && k < top_k; ++c) {
            if (f[c]) sel[k++] = (int32_t)c;
        }
    }
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

void launch_attention(const AttnKeys& k, int64_t p0, int64_t n, const float* Q, int64_t n_head, int64_t D,
                      const float* sinks, const RopeSpec& rope, double* scores, int64_t ld_scores, float* O,
                      void* s) {
    if (n <= 0 || n_head <= 0) return;
    if (rope.n_rot > kMaxRot) {
        throw ArgumentError(DS4_GPU_WHO ": attention: n_rot " + std::to_string(rope.n_rot) + " > " +
                            std::to_string(kMaxRot));
    }
    if (D > (int64_t)kThreads * kOutPerThread) {
        throw ArgumentError(DS4_GPU_WHO ": attention: head_dim " + std::to_string(D) + " > " +
                            std::to_string(kThreads * kOutPerThread));
    }
    const Keys keys{k.ring, k.ring_rows, k.n_swa, k.comp, k.ratio, k.selected, k.top_k, k.rows, k.T};
    ds4_launch(ds4_attention_kernel, dim3((unsigned)(n * n_head)), dim3(kThreads), s, keys, p0, Q, n_head, D, sinks,
               rope, scores, ld_scores, O);
    DS4_GPU_CHECK_LAUNCH("ds4_attention_kernel");
}

void launch_indexer_select(const uint16_t* idx_rows, int64_t p0, const float* q, const float* w, int64_t n,
                           int64_t n_head, int64_t d, int64_t top_k, double* scores, int32_t* flags, int64_t ld,
                           int32_t* selected, void* s) {
    if (n <= 0) return;
    const unsigned gx = (unsigned)((ld + kThreads - 1) / kThreads);
    ds4_launch(ds4_indexer_scores_kernel, dim3(gx > 0 ? gx : 1, (unsigned)n), dim3(kThreads), s, idx_rows, p0, q, w, n,
               n_head, d, top_k, scores, ld);
    DS4_GPU_CHECK_LAUNCH("ds4_indexer_scores_kernel");
    ds4_launch(ds4_indexer_topk_kernel, dim3((unsigned)n), dim3(kThreads), s, p0, top_k, scores, flags, ld, selected);
    DS4_GPU_CHECK_LAUNCH("ds4_indexer_topk_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
