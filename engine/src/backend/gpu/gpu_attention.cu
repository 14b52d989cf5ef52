// Attention on the GPU over the sequence state (cpu_attention.cpp).
//
// attention: per (token, head), key t is a window row (F16 in the ring), then a compressed row
// (F16; all visible ones or the indexer's selection), or, for attention_rows, row t of a float
// array. A group of 4 threads scores each key with the CPU's dot (gpu_math.h attn_dot: four of
// its 16 lanes per thread, the same fmas, exact products; 4 consecutive elements per load).
// The softmax and the weighted sum of the values run by chunks of keys (the comment above
// kChunkKeys gives the order), in double throughout: against the CPU's single pass over the
// keys only the last bits of a double differ (at most a rare one-ulp flip of a float output).
// Nothing depends on the other tokens of the call or on which schedule ran (verify == decode ==
// prefill).
//
// (The indexer's selection is gpu_indexer.cu.)
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"  // before gpu_dequant.h: core/numerics.h needs its device libm
#include "backend/gpu/gpu_dequant.h"
#include "backend/gpu/gpu_dot.h"  // Float4
#include "backend/gpu/gpu_step_pos.h"
#include "backend/gpu/gpu_tree.h"

#include <stdint.h>

namespace {
constexpr int kThreads = 256;
constexpr int kOutPerThread = 2;  // head_dim <= kThreads * kOutPerThread (the launcher checks)
constexpr int kDotLanes = 16;       // attn_dot's lanes
constexpr int kLanesPerThread = 4;  // consecutive lanes a thread holds: elements 16m + 4g .. + 4
constexpr int kDotThreads = kDotLanes / kLanesPerThread;  // threads that score one key
constexpr int kKeysPerRound = kThreads / kDotThreads;
constexpr int kLoadAhead = 16;      // keys whose values a thread loads before adding them

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

struct alignas(8) U32x2 {
    uint32_t x, y;
};

// A key row as attention reads it: at(i) is element i widened to double; at4(i, v) elements
// i .. i + 4 with one 8- or 16-byte load when `v4` (the launcher checks the alignment).
struct F16Key {
    const uint16_t* r;
    __device__ double at(int64_t i) const { return (double)ds4::gpu::f16_bits_to_f32(r[i]); }
    __device__ void at4(int64_t i, bool v4, double* v) const {
        if (v4) {
            const U32x2 w = *reinterpret_cast<const U32x2*>(r + i);
            v[0] = (double)ds4::gpu::f16_bits_to_f32((uint16_t)(w.x & 0xFFFFu));
            v[1] = (double)ds4::gpu::f16_bits_to_f32((uint16_t)(w.x >> 16));
            v[2] = (double)ds4::gpu::f16_bits_to_f32((uint16_t)(w.y & 0xFFFFu));
            v[3] = (double)ds4::gpu::f16_bits_to_f32((uint16_t)(w.y >> 16));
        } else {
            for (int u = 0; u < 4; ++u) v[u] = at(i + u);
        }
    }
};
struct F32Key {
    const float* r;
    __device__ double at(int64_t i) const { return (double)r[i]; }
    __device__ void at4(int64_t i, bool v4, double* v) const {
        if (v4) {
            const ds4::gpu::Float4 w = *reinterpret_cast<const ds4::gpu::Float4*>(r + i);
            v[0] = w.a, v[1] = w.b, v[2] = w.c, v[3] = w.d;
        } else {
            for (int u = 0; u < 4; ++u) v[u] = at(i + u);
        }
    }
};

// The score of one key by kDotThreads threads, gpu_math.h attn_dot step for step: thread g of
// the key holds attn_dot's lanes 4g .. 4g + 3 (a[l]: elements l, l + 16, ... by fma from +0,
// four independent chains), then the key's first thread combines the 16 sums from shared
// memory in attn_dot's pairs and adds the tail. `lane_sum` is the block's shared array of
// kLanesPerThread * kThreads; every thread calls it (it has barriers). v4: q and the key rows
// allow at4's wide loads.
template <class Key>
__device__ inline double group_attn_dot(const float* q, const Key& key, int64_t n, bool live, bool v4,
                                        double* lane_sum) {
    const int t = (int)ds4_thread_x(), g = t % kDotThreads;
    const int64_t n16 = n - n % 16;
    double a[kLanesPerThread] = {0.0, 0.0, 0.0, 0.0};
    if (live) {
#pragma unroll 8
        for (int64_t i = (int64_t)g * kLanesPerThread; i < n16; i += kDotLanes) {
            double qv[kLanesPerThread], kv[kLanesPerThread];
            F32Key{q}.at4(i, v4, qv);
            key.at4(i, v4, kv);
            for (int u = 0; u < kLanesPerThread; ++u) a[u] = __builtin_fma(qv[u], kv[u], a[u]);
        }
    }
    for (int u = 0; u < kLanesPerThread; ++u) lane_sum[kLanesPerThread * t + u] = a[u];
    ds4_sync_block();
    double r = 0.0;
    if (live && g == 0) {
        const double* A = lane_sum + kLanesPerThread * t;  // the key's 16 lanes in order
        double s[4];
        for (int k = 0; k < 4; ++k) s[k] = (A[k] + A[4 + k]) + (A[8 + k] + A[12 + k]);
        r = (s[0] + s[1]) + (s[2] + s[3]);
        for (int64_t i = n16; i < n; ++i) r = __builtin_fma((double)q[i], key.at(i), r);
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

// The softmax by chunks of kChunkKeys keys (one scoring round each), in one order whichever
// schedule runs it: chunk c's maximum m_c, weights e_k = exp(s_k - m_c), l_c = sum of its e_k in
// key order and o_c[j] = sum of e_k key_k[j] by fma in key order, all from 0; then M = max(sink,
// m_0, m_1, ...), w_c = exp(m_c - M), den = exp(sink - M) and o[j] = 0 take fma(w_c, l_c, den) and
// fma(w_c, o_c[j], o[j]) for c in order, and out[j] = o[j] / den. Calls of up to kSplitTokens
// tokens (decode, verify and the session's prefill blocks) run a block per chunk and a combine
// kernel (chunk blocks side by side: one block per head had left 64 blocks working through the
// keys one round after another, and a prefill block of 32 tokens had spent 0.28 ms a layer
// there); longer calls run all chunks in one block per (token, head) (no partial sums to
// store). The same operations in the same order: the bits do not depend on the schedule, so
// verify == decode == prefill still holds. DS4KIT_GPU_ATTN_SCHEDULE=auto|chunks|heads
// overrides the choice (tests/gpu compares the two).
constexpr int kChunkKeys = kKeysPerRound;

namespace {
struct Head {  // what a block needs of its (token, head)
    TokenKeys tk;
    int64_t T, h;
    const float* q;
};
__device__ inline Head head_of(const Keys& keys, int64_t b, int64_t p0, const float* Q, int64_t n_head, int64_t D) {
    const int64_t i = b / n_head, h = b % n_head;
    Head hd{token_keys(keys, i, p0 + i), 0, h, Q + (i * n_head + h) * D};
    hd.T = hd.tk.nwin + hd.tk.ncomp;
    return hd;
}
__host__ __device__ inline int64_t chunks_of(int64_t T) { return (T + kChunkKeys - 1) / kChunkKeys; }
__device__ inline const void* key_row_of(const Keys& keys, const TokenKeys& tk, int64_t k, int64_t D) {
    return keys.ring ? (const void*)tk.f16_row(k, D) : (const void*)(keys.rows + k * D);
}

// Chunk c's scores into s[k] (scaled by 1/sqrt(D)); returns its maximum to every thread.
// red: shared, kThreads * kLanesPerThread doubles. Has barriers.
__device__ inline double chunk_scores(const Keys& keys, const Head& hd, int64_t D, bool v4, int64_t c, double* s,
                                      double* red) {
    const int t = (int)ds4_thread_x();
    const int64_t k = c * kChunkKeys + t / kDotThreads;
    const bool live = k < hd.T;
    double v;
    if (keys.ring) {
        v = group_attn_dot(hd.q, F16Key{live ? hd.tk.f16_row(k, D) : nullptr}, D, live, v4, red);
    } else {
        v = group_attn_dot(hd.q, F32Key{keys.rows + (live ? k : 0) * D}, D, live, v4, red);
    }
    double mx = -INFINITY;
    if (live && t % kDotThreads == 0) {
        v *= 1.0 / ds4::num::sqrt_f64((double)D);
        s[k] = v;
        mx = v;
    }
    red[t] = mx;
    ds4::gpu::tree_reduce<1>(red, 0, 0, t, kThreads, [](double a, double b) { return ds4::num::max_f64(a, b); });
    const double m = red[0];
    ds4_sync_block();  // red is reused
    return m;
}

// Chunk c's o_c (this thread's outputs, into acc) and l_c (returned to every thread), with
// weights exp(s_k - m_c). key_row, key_w: shared arrays of kChunkKeys; l: a shared double.
__device__ inline double chunk_values(const Keys& keys, const Head& hd, int64_t D, int64_t c, double m_c,
                                      const double* s, const void** key_row, double* key_w, double* l, double* acc) {
    const int t = (int)ds4_thread_x();
    const int64_t k0 = c * kChunkKeys, kt = hd.T - k0 < kChunkKeys ? hd.T - k0 : kChunkKeys;
    for (int64_t kk = t; kk < kt; kk += kThreads) {
        key_row[kk] = key_row_of(keys, hd.tk, k0 + kk, D);
        key_w[kk] = ::exp(s[k0 + kk] - m_c);
    }
    ds4_sync_block();
    if (t == 0) {  // l_c in key order, from shared memory
        double sum = 0.0;
        for (int64_t kk = 0; kk < kt; ++kk) sum += key_w[kk];
        *l = sum;
    }
    for (int jj = 0; jj < kOutPerThread; ++jj) acc[jj] = 0.0;
    if (keys.ring) {
        tile_outputs(key_row, key_w, kt, D, acc, [](const void* row, int64_t j) {
            return (double)ds4::gpu::f16_bits_to_f32(((const uint16_t*)row)[j]);
        });
    } else {
        tile_outputs(key_row, key_w, kt, D, acc,
                     [](const void* row, int64_t j) { return (double)((const float*)row)[j]; });
    }
    ds4_sync_block();  // *l is visible; key_row and key_w are reused
    return *l;
}

// Chunk c's part of the combine, in chunk order: w = exp(m_c - M), den = fma(w, l_c, den) and
// acc[jj] = fma(w, o_c[jj], acc[jj]) for the thread's outputs. Both schedules call it, so their
// bits agree.
__device__ inline void add_chunk(double m_c, double M, double l_c, const double* o_c, double* den, double* acc) {
    const double w = ::exp(m_c - M);
    *den = __builtin_fma(w, l_c, *den);
    for (int jj = 0; jj < kOutPerThread; ++jj) acc[jj] = __builtin_fma(w, o_c[jj], acc[jj]);
}

// o[j] = (float)(acc / den) for the thread's outputs, then the inverse RoPE of the row (cs:
// the position's angles in shared memory).
__device__ inline void finish_head(const double* acc, double den, const ds4::RopeSpec& rope, const double* cs,
                                   int64_t D, float* o) {
    const int t = (int)ds4_thread_x();
    for (int jj = 0; jj < kOutPerThread; ++jj) {
        const int64_t j = t + (int64_t)jj * kThreads;
        if (j < D) o[j] = (float)(acc[jj] / den);
    }
    ds4_sync_block();
    for (int64_t pi = t; pi < rope.n_rot / 2; pi += kThreads) ds4::gpu::rope_pair(o, D, rope.n_rot, cs, pi, true);
}
}  // namespace

// One block per (token i, head h) = block i * n_head + h, every chunk in turn. scores: [n * n_head]
// rows of ld_scores doubles of scratch, the scores from 0 and the chunk maxima from chunk_max_at.
extern "C" __global__ void ds4_attention_kernel(Keys keys, ds4::gpu::StepPos pos, const float* Q, int64_t n_head,
                                                int64_t D, const float* sinks, ds4::RopeSpec rope, double* scores,
                                                int64_t ld_scores, int64_t chunk_max_at, int v4, float* O) {
    ds4_kernel_entry();
    __shared__ double cs[ds4::gpu::kRopeShared];
    __shared__ double red[kThreads * kLanesPerThread];
    __shared__ double l_s;
    __shared__ const void* key_row[kChunkKeys];
    __shared__ double key_w[kChunkKeys];
    const int64_t b = ds4_block_x(), p0 = ds4::gpu::pos_of(pos);
    const Head hd = head_of(keys, b, p0, Q, n_head, D);
    double* s = scores + b * ld_scores;
    double* m = s + chunk_max_at;
    ds4::gpu::rope_cos_sin_block((double)(p0 + b / n_head), rope, cs);
    const int64_t nch = chunks_of(hd.T);
    double M = (double)sinks[hd.h];
    for (int64_t c = 0; c < nch; ++c) {
        m[c] = chunk_scores(keys, hd, D, v4 != 0, c, s, red);  // every thread writes the same value
        M = ds4::num::max_f64(M, m[c]);
    }
    double den = ::exp((double)sinks[hd.h] - M), acc[kOutPerThread] = {}, acc_c[kOutPerThread];
    for (int64_t c = 0; c < nch; ++c) {
        const double l = chunk_values(keys, hd, D, c, m[c], s, key_row, key_w, &l_s, acc_c);
        add_chunk(m[c], M, l, acc_c, &den, acc);
    }
    finish_head(acc, den, rope, cs, D, O + b * D);
}

// Block (i * n_head + h, c): chunk c of that head, its o_c, m_c and l_c into part_o [block][nch][D]
// and part_ml [block][nch][2] (nch: the chunks of the call's longest token).
extern "C" __global__ void ds4_attention_chunk_kernel(Keys keys, ds4::gpu::StepPos pos, const float* Q,
                                                      int64_t n_head, int64_t D, double* scores, int64_t ld_scores,
                                                      int64_t nch, int v4, double* part_o, double* part_ml) {
    ds4_kernel_entry();
    __shared__ double red[kThreads * kLanesPerThread];
    __shared__ double l_s;
    __shared__ const void* key_row[kChunkKeys];
    __shared__ double key_w[kChunkKeys];
    const int64_t b = ds4_block_x(), c = ds4_block_y();
    const Head hd = head_of(keys, b, ds4::gpu::pos_of(pos), Q, n_head, D);
    if (c >= chunks_of(hd.T)) return;  // the whole block: past this token's keys
    double* s = scores + b * ld_scores;
    const double m_c = chunk_scores(keys, hd, D, v4 != 0, c, s, red);
    double acc[kOutPerThread];
    const double l = chunk_values(keys, hd, D, c, m_c, s, key_row, key_w, &l_s, acc);
    double* o = part_o + (b * nch + c) * D;
    for (int jj = 0; jj < kOutPerThread; ++jj) {
        const int64_t j = ds4_thread_x() + (int64_t)jj * kThreads;
        if (j < D) o[j] = acc[jj];
    }
    if (ds4_thread_x() == 0) part_ml[(b * nch + c) * 2] = m_c, part_ml[(b * nch + c) * 2 + 1] = l;
}

// Block i * n_head + h: the chunks' partial sums combined in chunk order, as ds4_attention_kernel does.
extern "C" __global__ void ds4_attention_combine_kernel(Keys keys, ds4::gpu::StepPos pos, const float* Q,
                                                        int64_t n_head, int64_t D, const float* sinks,
                                                        ds4::RopeSpec rope, int64_t nch, const double* part_o,
                                                        const double* part_ml, float* O) {
    ds4_kernel_entry();
    __shared__ double cs[ds4::gpu::kRopeShared];
    const int64_t b = ds4_block_x(), p0 = ds4::gpu::pos_of(pos);
    const Head hd = head_of(keys, b, p0, Q, n_head, D);
    ds4::gpu::rope_cos_sin_block((double)(p0 + b / n_head), rope, cs);
    const int64_t used = chunks_of(hd.T);
    const double* ml = part_ml + b * nch * 2;
    double M = (double)sinks[hd.h];
    for (int64_t c = 0; c < used; ++c) M = ds4::num::max_f64(M, ml[2 * c]);
    double den = ::exp((double)sinks[hd.h] - M), acc[kOutPerThread] = {};
    for (int64_t c = 0; c < used; ++c) {
        const double* o = part_o + (b * nch + c) * D;
        double o_c[kOutPerThread];
        for (int jj = 0; jj < kOutPerThread; ++jj) {
            const int64_t j = ds4_thread_x() + (int64_t)jj * kThreads;
            o_c[jj] = j < D ? o[j] : 0.0;
        }
        add_chunk(ml[2 * c], M, ml[2 * c + 1], o_c, &den, acc);
    }
    finish_head(acc, den, rope, cs, D, O + b * D);
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {
// Calls of up to kSplitTokens tokens run a block per chunk (Ds4Session's blocks hold 32); those
// of more than kVerifyTokens only while the partial sums stay under kMaxPartBytes (a prefill
// block at a million tokens of context would need 1.1 GB).
constexpr int64_t kSplitTokens = 32, kVerifyTokens = 16, kMaxPartBytes = (int64_t)256 << 20;

int64_t part_doubles(int64_t n, int64_t n_head, int64_t D, int64_t most) {
    return n * n_head * chunks_of(most) * (D + 2);
}

// Whether a call of n tokens runs a block per chunk (and the combine) rather than a block per
// (token, head): the rule above, or DS4KIT_GPU_ATTN_SCHEDULE=chunks|heads.
bool chunk_schedule(int64_t n, int64_t n_head, int64_t D, int64_t most) {
    switch (env_choice("DS4KIT_GPU_ATTN_SCHEDULE", {"auto", "chunks", "heads"})) {
        case 1: return true;
        case 2: return false;
        default:
            return n <= kVerifyTokens ||
                   (n <= kSplitTokens && part_doubles(n, n_head, D, most) * (int64_t)sizeof(double) <= kMaxPartBytes);
    }
}
}  // namespace

AttnScratch attention_scratch(int64_t n, int64_t n_head, int64_t D, int64_t most) {
    const int64_t nch = chunks_of(most), rows = n * n_head;
    AttnScratch a;
    a.scores = rows * (most + nch);
    a.part = chunk_schedule(n, n_head, D, most) ? part_doubles(n, n_head, D, most) : 0;
    return a;
}

void launch_attention(const AttnKeys& k, StepPos p0, int64_t n, const float* Q, int64_t n_head, int64_t D,
                      const float* sinks, const RopeSpec& rope, int64_t most, double* scores, double* part, float* O,
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
    const int64_t nch = chunks_of(most), ld = most + nch, rows = n * n_head;
    if (rows > 0x7fffffff || nch > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": attention: " + std::to_string(rows) + " heads x " + std::to_string(most) +
                            " keys exceed the launch grid");
    }
    const Keys keys{k.ring, k.ring_rows, k.n_swa, k.comp, k.ratio, k.selected, k.top_k, k.rows, k.T};
    // Wide loads of q and the keys: rows of a multiple of 4 values from 16-byte aligned bases.
    auto a16 = [](const void* p) { return (uintptr_t)p % 16 == 0; };
    const int v4 = D % 4 == 0 && a16(Q) && (k.ring ? a16(k.ring) && (!k.comp || a16(k.comp)) : a16(k.rows)) ? 1 : 0;
    if (!chunk_schedule(n, n_head, D, most) || nch == 0) {
        ds4_launch(ds4_attention_kernel, dim3((unsigned)rows), dim3(kThreads), s, keys, p0, Q, n_head, D, sinks, rope,
                   scores, ld, most, v4, O);
        DS4_GPU_CHECK_LAUNCH("ds4_attention_kernel");
        return;
    }
    double* part_o = part;
    double* part_ml = part + rows * nch * D;
    ds4_launch(ds4_attention_chunk_kernel, dim3((unsigned)rows, (unsigned)nch), dim3(kThreads), s, keys, p0, Q, n_head,
               D, scores, ld, nch, v4, part_o, part_ml);
    DS4_GPU_CHECK_LAUNCH("ds4_attention_chunk_kernel");
    ds4_launch(ds4_attention_combine_kernel, dim3((unsigned)rows), dim3(kThreads), s, keys, p0, Q, n_head, D, sinks,
               rope, nch, (const double*)part_o, (const double*)part_ml, O);
    DS4_GPU_CHECK_LAUNCH("ds4_attention_combine_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
