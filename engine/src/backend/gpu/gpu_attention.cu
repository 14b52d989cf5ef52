// Attention on the GPU over the sequence state (cpu_attention.cpp).
//
// Key t of token i is a window row (F16 in the ring), then a compressed row (F16; all visible
// ones or the indexer's selection), or, for attention_rows, row t of a float array. The model
// has one key row for all heads (K = V, one latent), so a block takes a group of HG heads of one
// token and one chunk of 64 keys: every key element is loaded and widened to double once for
// HG heads, and the scores and the weighted values are two small double-precision products
// through shared memory (a block per head widened each key 64 times, and its conversions, not
// its fmas, were its cost). Groups of 8 heads or fewer (decode's and short verifies': a token
// has few chunks, so small groups fill the GPU) read the key rows straight from memory, a
// thread a (range, key) for the scores and two outputs of every head for the values, with no
// barrier inside either walk.
//
// The order, which no schedule changes (so verify == decode == prefill): the score of key k for
// head h is, for each range of 128 values of d (d = 128 r .. 128 r + 127, the last cut at D), one
// fma chain from +0 of q[d] * key[d] (both widened to double, so every product is exact), the
// ranges' chains added in order (s = c_0, s = s + c_1, ...), times 1 / sqrt(D). (One chain over
// all of d left a block of few heads, decode's, 512 dependent fmas a score.) Chunk c (keys 64c .. 64c + 63): its maximum m_c
// in key order, weights e_k = exp(s_k - m_c), l_c = sum of its e_k in key order from 0, and o_c[j]
// = fma chain over its keys in order from 0 of e_k * key_k[j]. The combine kernel then takes
// M = max(sink, m_0, m_1, ...), w_c = exp(m_c - M), den = exp(sink - M), den = fma(w_c, l_c, den)
// and o[j] = fma(w_c, o_c[j], o[j]) for c in order, and out[j] = o[j] / den, then the inverse RoPE.
// Against the CPU's 16-lane dot and single pass over the keys only the last bits of a double
// differ (at most a rare one-ulp flip of a float output). How many heads a block takes
// (DS4KIT_GPU_ATTN_HEADS) and how many tokens a launch takes (DS4KIT_GPU_ATTN_TOKENS) change
// no bit; tests/gpu forces both ways.
//
// (The indexer's selection is gpu_indexer.cu.)
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"  // before gpu_dequant.h: core/numerics.h needs its device libm
#include "backend/gpu/gpu_dequant.h"
#include "backend/gpu/gpu_dot.h"  // Float4
#include "backend/gpu/gpu_step_pos.h"

#include <stdint.h>

namespace {
constexpr int kThreads = 256;
constexpr int kChunkKeys = 64;
constexpr int kMaxHeadDim = 512;  // the launcher checks; the value tiles hold at most this many outputs
constexpr int kScoreRange = 128;  // a score's fma chains: one a range of this many values of d
constexpr int kRanges = kMaxHeadDim / kScoreRange;

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

__host__ __device__ inline int64_t chunks_of(int64_t T) { return (T + kChunkKeys - 1) / kChunkKeys; }

struct alignas(8) U32x2 {
    uint32_t x, y;
};
struct alignas(8) F32x2 {
    float x, y;
};

// Four values from d of a row as floats (exact: F16 widens exactly), zero past n: one 16-byte
// load (floats) or 8-byte load (F16) when `v4` and the four are inside the row.
__device__ inline void load4_f32(const float* r, int64_t d, int64_t n, bool v4, float* v) {
    if (v4 && d + 4 <= n) {
        const ds4::gpu::Float4 w = *reinterpret_cast<const ds4::gpu::Float4*>(r + d);
        v[0] = w.a, v[1] = w.b, v[2] = w.c, v[3] = w.d;
    } else {
        for (int u = 0; u < 4; ++u) v[u] = d + u < n ? r[d + u] : 0.0f;
    }
}
__device__ inline void f16x2_to_f32(uint32_t w, float* v) {
    v[0] = ds4::gpu::f16_bits_to_f32((uint16_t)(w & 0xFFFFu));
    v[1] = ds4::gpu::f16_bits_to_f32((uint16_t)(w >> 16));
}
__device__ inline void load4_f16(const uint16_t* r, int64_t d, int64_t n, bool v4, float* v) {
    if (v4 && d + 4 <= n) {
        const U32x2 w = *reinterpret_cast<const U32x2*>(r + d);
        f16x2_to_f32(w.x, v);
        f16x2_to_f32(w.y, v + 2);
    } else {
        for (int u = 0; u < 4; ++u) v[u] = d + u < n ? ds4::gpu::f16_bits_to_f32(r[d + u]) : 0.0f;
    }
}

// Four values from d of a key row (F16 in the ring and compressed rows, floats in rows mode).
__device__ inline void load4_key(const void* r, bool f16, int64_t d, int64_t n, bool v4, float* v) {
    if (f16) {
        load4_f16((const uint16_t*)r, d, n, v4, v);
    } else {
        load4_f32((const float*)r, d, n, v4, v);
    }
}

// Two values from d (even) of a key row: one 4-byte (F16) or 8-byte (floats) load when `v4`
// (rows of a multiple of 4 values on 16-byte boundaries) and both are inside the row.
__device__ inline void load2_key(const void* r, bool f16, int64_t d, int64_t n, bool v4, float* v) {
    if (v4 && d + 2 <= n) {
        if (f16) {
            f16x2_to_f32(*reinterpret_cast<const uint32_t*>((const uint16_t*)r + d), v);
        } else {
            const F32x2 w = *reinterpret_cast<const F32x2*>((const float*)r + d);
            v[0] = w.x, v[1] = w.y;
        }
        return;
    }
    for (int u = 0; u < 2; ++u) {
        v[u] = d + u >= n ? 0.0f : f16 ? ds4::gpu::f16_bits_to_f32(((const uint16_t*)r)[d + u]) : ((const float*)r)[d + u];
    }
}

// step(0) .. step(n - 1) for n <= N, unrolled when n is the whole N (a full slab).
template <int N, class Step>
__device__ inline void slab_steps(int64_t n, Step step) {
    if (n == N) {
#pragma unroll
        for (int i = 0; i < N; ++i) step(i);
    } else {
        for (int i = 0; i < (int)n; ++i) step(i);
    }
}

// The tiles of a block of HG heads (gpu_attention.cu's header gives the order they keep); the
// staged fields serve groups of more than 8 heads (kDirect: fewer use direct_scores and
// direct_values). Scores: GR x GH x GK threads, each TH heads (hq + GH a) by TK keys (kq + GK b)
// over one range of d (GR = kRanges, the group of 16: the ranges' chains meet in shared memory,
// 256 chains in flight) or over all of d (GR = 1, the group of 64: a thread adds its chains as
// each range ends), through slabs of DS values of each range: the group's query rows
// and the chunk's key rows, widened, in `stage` as [range][d][row] (row < HG: a head, then the
// keys). Values: VH x VJ threads, each VTH heads (hq + VH a) by TJ outputs (jq + VJ b) of a
// JS-wide slab, through key slabs of KS rows in `stage` as [key][j]. Strided heads, keys and
// outputs: a warp's reads of the stage are consecutive doubles or one.
template <int HG>
struct Group {
    // Groups of few heads (decode's and short verifies') walk the key rows straight from memory
    // (direct_scores, direct_values): staged slabs cost them a barrier and a load's latency a
    // few fmas.
    static constexpr bool kDirect = HG <= 8;
    static constexpr int GR = HG >= 64 ? 1 : kRanges;
    static constexpr int TH = HG >= 16 ? 4 : HG >= 8 ? 2 : 1;
    static constexpr int TK = HG >= 4 ? 4 : 1;
    static constexpr int GH = HG / TH, GK = kChunkKeys / TK;
    static constexpr int R = HG + kChunkKeys;  // stage rows in the score phase
    static constexpr int DS = HG >= 16 ? 8 : 16;  // divides kScoreRange: a slab never straddles two ranges
    static constexpr int kPartials = GR > 1 ? GR * kChunkKeys * HG : 0;  // the ranges' sums [range][key][head]
    static constexpr int kStaged = kDirect ? HG * kMaxHeadDim : R * GR * DS;  // direct: the query rows
    static constexpr int kStage = kStaged > kPartials ? kStaged : kPartials;  // doubles
    static constexpr int kScoreQuads = (R * GR * DS / 4 + kThreads - 1) / kThreads;  // a thread's, a slab
    static constexpr int VTH = HG >= 64 ? 4 : HG >= 16 ? 2 : 1;
    static constexpr int VH = HG / VTH, VJ = kThreads / VH;
    static constexpr int JS = VJ * 8 < kMaxHeadDim ? VJ * 8 : kMaxHeadDim;
    static constexpr int TJ = JS / VJ;
    static constexpr int KS = (kStage < 2048 ? kStage : 2048) / JS;  // the value phase's registers stay few
    static constexpr int kValueQuads = (KS * JS / 4 + kThreads - 1) / kThreads;
    static_assert(GR * GH * GK == kThreads && VH * VJ == kThreads && kScoreRange % DS == 0 && kScoreQuads >= 1 &&
                      TJ >= 1 && KS >= 1,
                  "tile shape");
};

// What a block needs of its token: the keys, how many there are, its query rows.
struct TokenHeads {
    TokenKeys tk;
    int64_t T;
};
__device__ inline TokenHeads token_heads(const Keys& keys, int64_t i, int64_t p) {
    TokenHeads th{token_keys(keys, i, p), 0};
    th.T = th.tk.nwin + th.tk.ncomp;
    return th;
}

// The four values at d of stage row `row`: a query row (row < HG) or key row - HG of the chunk
// (zeros past its kt keys).
template <int HG>
__device__ inline void score_quad(const float* q, int64_t D, const void* const* key_row, bool f16, int64_t kt,
                                  int row, int64_t d, bool v4, float* v) {
    if (row < HG) {
        load4_f32(q + row * D, d, D, v4, v);
    } else if (row - HG < kt) {
        load4_key(key_row[row - HG], f16, d, D, v4, v);
    } else {
        for (int u = 0; u < 4; ++u) v[u] = 0.0f;
    }
}

// e_s [key][head] = the score from the ranges' chains in part [range][key][head] (added in
// range order, times 1 / sqrt(D)). Every thread calls it (a barrier at the end).
template <int HG>
__device__ inline void add_ranges(int64_t D, int64_t kt, const double* part, double* e_s) {
    const double scale = 1.0 / ds4::num::sqrt_f64((double)D);
    const int ranges = (int)((D + kScoreRange - 1) / kScoreRange);
    for (int x = (int)ds4_thread_x(); x < (int)kt * HG; x += kThreads) {
        double s = part[x];
        for (int r = 1; r < ranges; ++r) s = s + part[r * kChunkKeys * HG + x];
        e_s[x] = s * scale;
    }
    ds4_sync_block();
}

// The chunk's scores (times 1 / sqrt(D)) into e_s [key][head]: each (head, key) one fma chain
// from +0 a range of kScoreRange values of d, the chains added in range order. Every thread
// calls it (barriers).
template <int HG>
__device__ inline void group_scores(const float* q, int64_t D, const void* const* key_row, bool f16, int64_t kt,
                                    bool v4, double* stage, double* e_s) {
    using G = Group<HG>;
    const int t = (int)ds4_thread_x();
    const int rq = t / (G::GH * G::GK), hq = t % (G::GH * G::GK) / G::GK, kq = t % G::GK;
    // A range's length (its d from rq kScoreRange); with GR = 1 the thread walks all of d.
    const int64_t span = G::GR > 1 ? (D < kScoreRange ? D : kScoreRange) : D;
    const int64_t own = G::GR > 1 ? D - (int64_t)rq * kScoreRange : D;
    const int64_t mine = own < span ? own : span;  // may be <= 0: a range past D
    double acc[G::TH][G::TK];
    for (int a = 0; a < G::TH; ++a)
        for (int b = 0; b < G::TK; ++b) acc[a][b] = 0.0;
    float pre[G::kScoreQuads][4];
    constexpr int kRowQuads = G::GR * G::DS / 4;  // a row's quads in a slab
    auto load_slab = [&](int64_t d0) {
        for (int u = 0; u < G::kScoreQuads; ++u) {
            const int idx = t + u * kThreads;
            if (idx < G::R * kRowQuads) {
                const int row = idx / kRowQuads, r = idx % kRowQuads / (G::DS / 4), dq = 4 * (idx % (G::DS / 4));
                score_quad<HG>(q, D, key_row, f16, kt, row, (int64_t)r * kScoreRange + d0 + dq, v4, pre[u]);
            }
        }
    };
    load_slab(0);
    for (int64_t d0 = 0; d0 < span; d0 += G::DS) {
        ds4_sync_block();  // the slab before is read
        for (int u = 0; u < G::kScoreQuads; ++u) {
            const int idx = t + u * kThreads;
            if (idx < G::R * kRowQuads) {
                const int row = idx / kRowQuads, rd = 4 * (idx % kRowQuads);  // rd: range r's d0 + dq at r DS + dq
                for (int w = 0; w < 4; ++w) stage[(rd + w) * G::R + row] = (double)pre[u][w];
            }
        }
        ds4_sync_block();
        if (d0 + G::DS < span) load_slab(d0 + G::DS);
        const double* sl = stage + rq * G::DS * G::R;
        slab_steps<G::DS>(mine - d0 < G::DS ? (mine - d0 > 0 ? mine - d0 : 0) : G::DS, [&](int dd) {
            double qv[G::TH], kv[G::TK];
            for (int a = 0; a < G::TH; ++a) qv[a] = sl[dd * G::R + hq + G::GH * a];
            for (int b = 0; b < G::TK; ++b) kv[b] = sl[dd * G::R + HG + kq + G::GK * b];
            for (int a = 0; a < G::TH; ++a)
                for (int b = 0; b < G::TK; ++b) acc[a][b] = __builtin_fma(qv[a], kv[b], acc[a][b]);
        });
        if (G::GR == 1 && ((d0 + G::DS) % kScoreRange == 0 || d0 + G::DS >= D)) {
            // A range ends: its chains added to the sums so far, in e_s (the thread's own slots;
            // registers for them spilled).
            const bool first = d0 < kScoreRange;
            for (int a = 0; a < G::TH; ++a)
                for (int b = 0; b < G::TK; ++b) {
                    double& e = e_s[(kq + G::GK * b) * HG + hq + G::GH * a];
                    e = first ? acc[a][b] : e + acc[a][b];
                    acc[a][b] = 0.0;
                }
        }
    }
    if (G::GR == 1) {
        const double scale = 1.0 / ds4::num::sqrt_f64((double)D);
        for (int a = 0; a < G::TH; ++a)
            for (int b = 0; b < G::TK; ++b) {
                double& e = e_s[(kq + G::GK * b) * HG + hq + G::GH * a];
                e = e * scale;
            }
        ds4_sync_block();
        return;
    }
    ds4_sync_block();  // the last slab is read: the stage takes the ranges' sums
    for (int a = 0; a < G::TH; ++a)
        for (int b = 0; b < G::TK; ++b) stage[(rq * kChunkKeys + kq + G::GK * b) * HG + hq + G::GH * a] = acc[a][b];
    ds4_sync_block();
    add_ranges<HG>(D, kt, stage, e_s);
}

// Scores of a group of few heads (Group::kDirect), the same chains: thread (range r = t / 64,
// key k = t % 64) walks its range of key row k from memory against the group's query rows,
// widened once into `stage` (broadcast reads), kAhead quads loaded before their products.
template <int HG>
__device__ inline void direct_scores(const float* q, int64_t D, const void* const* key_row, bool f16, int64_t kt,
                                     bool v4, double* stage, double* e_s) {
    static_assert(kRanges * kChunkKeys == kThreads, "a thread a (range, key)");
    const int t = (int)ds4_thread_x();
    for (int64_t x = t; x < HG * D; x += kThreads) stage[x] = (double)q[x];
    ds4_sync_block();
    const int r = t / kChunkKeys, k = t % kChunkKeys;
    const int64_t d0 = (int64_t)r * kScoreRange, d1 = D < d0 + kScoreRange ? D : d0 + kScoreRange;
    double acc[HG];
    for (int h = 0; h < HG; ++h) acc[h] = 0.0;
    if (k < kt) {
        constexpr int kAhead = 4;
        for (int64_t d = d0; d < d1; d += 4 * kAhead) {
            float kv[kAhead][4];
            const bool full = d + 4 * kAhead <= d1;
            if (f16 && v4 && full) {  // the common run: every load issued before the first use
                U32x2 w[kAhead];
#pragma unroll
                for (int u = 0; u < kAhead; ++u) w[u] = reinterpret_cast<const U32x2*>((const uint16_t*)key_row[k] + d)[u];
#pragma unroll
                for (int u = 0; u < kAhead; ++u) f16x2_to_f32(w[u].x, kv[u]), f16x2_to_f32(w[u].y, kv[u] + 2);
            } else {
#pragma unroll
                for (int u = 0; u < kAhead; ++u) {
                    if (d + 4 * u < d1) load4_key(key_row[k], f16, d + 4 * u, D, v4, kv[u]);
                }
            }
#pragma unroll
            for (int u = 0; u < kAhead; ++u) {
#pragma unroll
                for (int w = 0; w < 4; ++w) {
                    const int64_t dd = d + 4 * u + w;
                    if (full || dd < d1) {
                        const double kd = kv[u][w];
                        for (int h = 0; h < HG; ++h) acc[h] = __builtin_fma(stage[h * D + dd], kd, acc[h]);
                    }
                }
            }
        }
    }
    ds4_sync_block();  // the query rows are read: the stage takes the ranges' sums
    for (int h = 0; h < HG; ++h) stage[(r * kChunkKeys + k) * HG + h] = acc[h];
    ds4_sync_block();
    add_ranges<HG>(D, kt, stage, e_s);
}

// Weighted values of a group of few heads (Group::kDirect), the same chains: thread t takes
// outputs 2t and 2t + 1 of every head (D <= 2 kThreads), each key's two values from memory,
// kAhead keys loaded before their products; into part_o rows (a head's: part_stride apart).
template <int HG>
__device__ inline void direct_values(const void* const* key_row, bool f16, int64_t kt, int64_t D, bool v4,
                                     const double* e_s, double* part_o, int64_t part_stride) {
    static_assert(2 * kThreads >= kMaxHeadDim, "two outputs a thread");
    const int64_t j = 2 * (int64_t)ds4_thread_x();
    if (j >= D) return;
    double o[HG][2];
    for (int h = 0; h < HG; ++h) o[h][0] = 0.0, o[h][1] = 0.0;
    constexpr int kAhead = 8;
    for (int64_t k0 = 0; k0 < kt; k0 += kAhead) {
        float v[kAhead][2];
        if (f16 && v4 && k0 + kAhead <= kt) {  // the common run: every load issued before the first use
            uint32_t w[kAhead];
#pragma unroll
            for (int u = 0; u < kAhead; ++u) w[u] = *reinterpret_cast<const uint32_t*>((const uint16_t*)key_row[k0 + u] + j);
#pragma unroll
            for (int u = 0; u < kAhead; ++u) f16x2_to_f32(w[u], v[u]);
        } else {
#pragma unroll
            for (int u = 0; u < kAhead; ++u) {
                if (k0 + u < kt) load2_key(key_row[k0 + u], f16, j, D, v4, v[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < kAhead; ++u) {
            if (k0 + u < kt) {
                for (int h = 0; h < HG; ++h) {
                    const double w = e_s[(k0 + u) * HG + h];
                    o[h][0] = __builtin_fma(w, (double)v[u][0], o[h][0]);
                    o[h][1] = __builtin_fma(w, (double)v[u][1], o[h][1]);
                }
            }
        }
    }
    for (int h = 0; h < HG; ++h) {
        double* out = part_o + h * part_stride;
        out[j] = o[h][0];
        if (j + 1 < D) out[j + 1] = o[h][1];
    }
}

// Chunk c of the group's HG heads: the scores into e_s [key][head] (then the weights), the
// maxima and sums into m_s and l_s, this thread's outputs of the chunk's weighted values into
// part_o rows. Every thread calls it (barriers).
template <int HG>
__device__ inline void group_chunk(const Keys& keys, const TokenHeads& th, const float* q, int64_t D, int64_t c,
                                   bool v4, double* stage, double* e_s, double* m_s, double* l_s,
                                   const void** key_row, double* part_o, int64_t part_stride) {
    using G = Group<HG>;
    const int t = (int)ds4_thread_x();
    const int64_t k0 = c * kChunkKeys, kt = th.T - k0 < kChunkKeys ? th.T - k0 : kChunkKeys;
    const bool f16 = keys.ring != nullptr;
    for (int64_t k = t; k < kt; k += kThreads) {
        key_row[k] = f16 ? (const void*)th.tk.f16_row(k0 + k, D) : (const void*)(keys.rows + (k0 + k) * D);
    }
    ds4_sync_block();
    if constexpr (G::kDirect) {
        direct_scores<HG>(q, D, key_row, f16, kt, v4, stage, e_s);
    } else {
        group_scores<HG>(q, D, key_row, f16, kt, v4, stage, e_s);
    }

    // The chunk's maxima in key order, the weights, their sums in key order.
    if (t < HG) {
        double m = -INFINITY;
        for (int64_t k = 0; k < kt; ++k) m = ds4::num::max_f64(m, e_s[k * HG + t]);
        m_s[t] = m;
    }
    ds4_sync_block();
    for (int64_t x = t; x < kt * HG; x += kThreads) e_s[x] = ::exp(e_s[x] - m_s[x % HG]);
    ds4_sync_block();
    if (t < HG) {
        double sum = 0.0;
        for (int64_t k = 0; k < kt; ++k) sum += e_s[k * HG + t];
        l_s[t] = sum;
    }

    if constexpr (G::kDirect) {  // reads only e_s's weights (no barrier: nothing is overwritten)
        direct_values<HG>(key_row, f16, kt, D, v4, e_s, part_o, part_stride);
        return;
    }
    // The weighted values, a JS-wide slab of outputs at a time.
    const int vh = t / G::VJ, jq = t % G::VJ;
    float vpre[G::kValueQuads][4];
    for (int64_t j0 = 0; j0 < D; j0 += G::JS) {
        auto load_keys = [&](int64_t ks0) {
            for (int u = 0; u < G::kValueQuads; ++u) {
                const int idx = t + u * kThreads;
                const int kk = idx / (G::JS / 4);
                const int64_t j = j0 + 4 * (idx % (G::JS / 4));
                if (idx < G::KS * G::JS / 4 && ks0 + kk < kt) load4_key(key_row[ks0 + kk], f16, j, D, v4, vpre[u]);
            }
        };
        double o[G::VTH][G::TJ];
        for (int a = 0; a < G::VTH; ++a)
            for (int b = 0; b < G::TJ; ++b) o[a][b] = 0.0;
        load_keys(0);
        for (int64_t ks0 = 0; ks0 < kt; ks0 += G::KS) {
            ds4_sync_block();  // the slab before is read (and, first, the scores' stage)
            for (int u = 0; u < G::kValueQuads; ++u) {
                const int idx = t + u * kThreads;
                if (idx < G::KS * G::JS / 4) {
                    for (int w = 0; w < 4; ++w) stage[idx * 4 + w] = (double)vpre[u][w];
                }
            }
            ds4_sync_block();
            if (ks0 + G::KS < kt) load_keys(ks0 + G::KS);
            slab_steps<G::KS>(kt - ks0 < G::KS ? kt - ks0 : G::KS, [&](int kk) {
                double w[G::VTH], v[G::TJ];
                for (int a = 0; a < G::VTH; ++a) w[a] = e_s[(ks0 + kk) * HG + vh + G::VH * a];
                for (int b = 0; b < G::TJ; ++b) v[b] = stage[kk * G::JS + jq + G::VJ * b];
                for (int a = 0; a < G::VTH; ++a)
                    for (int b = 0; b < G::TJ; ++b) o[a][b] = __builtin_fma(w[a], v[b], o[a][b]);
            });
        }
        for (int a = 0; a < G::VTH; ++a) {
            double* out = part_o + (int64_t)(vh + G::VH * a) * part_stride;
            for (int b = 0; b < G::TJ; ++b) {
                const int64_t j = j0 + jq + G::VJ * b;
                if (j < D) out[j] = o[a][b];
            }
        }
    }
}
}  // namespace

// Block (token group bx, chunk c): bx = local token i * (n_head / HG) + g takes heads g HG ..
// g HG + HG - 1 of token i0 + i and writes, for each, o_c into part_o [row][nch][D] and (m_c,
// l_c) into part_ml [row][nch][2], row = i * n_head + head (nch: the chunks of the call's
// longest token).
template <int HG>
__device__ inline void attention_group_block(const Keys& keys, ds4::gpu::StepPos pos, int64_t i0, const float* Q,
                                             int64_t n_head, int64_t D, int64_t nch, int v4, double* part_o,
                                             double* part_ml) {
    using G = Group<HG>;
    __shared__ double stage[G::kStage];
    __shared__ double e_s[kChunkKeys * HG];
    __shared__ double m_s[HG], l_s[HG];
    __shared__ const void* key_row[kChunkKeys];
    const int64_t groups = n_head / HG, bx = ds4_block_x(), c = ds4_block_y();
    const int64_t il = bx / groups, h0 = (bx % groups) * HG, i = i0 + il;
    const TokenHeads th = token_heads(keys, i, ds4::gpu::pos_of(pos) + i);
    if (c >= chunks_of(th.T)) return;  // the whole block: past this token's keys
    const int64_t row0 = il * n_head + h0;
    group_chunk<HG>(keys, th, Q + (i * n_head + h0) * D, D, c, v4 != 0, stage, e_s, m_s, l_s, key_row,
                    part_o + (row0 * nch + c) * D, nch * D);
    if (ds4_thread_x() < HG) {
        double* ml = part_ml + ((row0 + ds4_thread_x()) * nch + c) * 2;
        ml[0] = m_s[ds4_thread_x()], ml[1] = l_s[ds4_thread_x()];
    }
}

// One kernel a head group, extern "C" like the others (a kernel template whose parameters have
// a type of this file's anonymous namespace did not launch: invalid resource handle on the H100).
#define DS4_ATTENTION_GROUP_KERNEL(HG)                                                                              \
    extern "C" __global__ void DS4_DOT_BOUNDS ds4_attention_group##HG##_kernel(                                     \
        Keys keys, ds4::gpu::StepPos pos, int64_t i0, const float* Q, int64_t n_head, int64_t D, int64_t nch, int v4, \
        double* part_o, double* part_ml) {                                                                          \
        ds4_kernel_entry();                                                                                         \
        attention_group_block<HG>(keys, pos, i0, Q, n_head, D, nch, v4, part_o, part_ml);                           \
    }
DS4_ATTENTION_GROUP_KERNEL(64)
DS4_ATTENTION_GROUP_KERNEL(16)
DS4_ATTENTION_GROUP_KERNEL(8)
DS4_ATTENTION_GROUP_KERNEL(4)
DS4_ATTENTION_GROUP_KERNEL(1)
#undef DS4_ATTENTION_GROUP_KERNEL

namespace {
using AttnGroupKernel = void (*)(Keys, ds4::gpu::StepPos, int64_t, const float*, int64_t, int64_t, int64_t, int,
                                 double*, double*);
// The kernel of head group hg (64, 16, 8, 4 or 1).
inline AttnGroupKernel attention_group_kernel(int hg) {
    switch (hg) {
        case 64: return ds4_attention_group64_kernel;
        case 16: return ds4_attention_group16_kernel;
        case 8: return ds4_attention_group8_kernel;
        case 4: return ds4_attention_group4_kernel;
        default: return ds4_attention_group1_kernel;
    }
}
}  // namespace

namespace {
// This thread's outputs of a row (j = t + 256 jj).
constexpr int kOutPerThread = kMaxHeadDim / kThreads;

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

// Block b = local token i * n_head + h: the chunks' partial sums of that head combined in chunk
// order (the header's order).
extern "C" __global__ void ds4_attention_combine_kernel(Keys keys, ds4::gpu::StepPos pos, int64_t i0,
                                                        int64_t n_head, int64_t D, const float* sinks,
                                                        ds4::RopeSpec rope, int64_t nch, const double* part_o,
                                                        const double* part_ml, float* O) {
    ds4_kernel_entry();
    __shared__ double cs[ds4::gpu::kRopeShared];
    const int64_t b = ds4_block_x(), i = i0 + b / n_head, h = b % n_head, p = ds4::gpu::pos_of(pos) + i;
    const TokenHeads th = token_heads(keys, i, p);
    ds4::gpu::rope_cos_sin_block((double)p, rope, cs);
    const int64_t used = chunks_of(th.T);
    const double* ml = part_ml + b * nch * 2;
    double M = (double)sinks[h];
    for (int64_t c = 0; c < used; ++c) M = ds4::num::max_f64(M, ml[2 * c]);
    double den = ::exp((double)sinks[h] - M), acc[kOutPerThread] = {};
    for (int64_t c = 0; c < used; ++c) {
        const double* o = part_o + (b * nch + c) * D;
        const double w = ::exp(ml[2 * c] - M);
        den = __builtin_fma(w, ml[2 * c + 1], den);
        for (int jj = 0; jj < kOutPerThread; ++jj) {
            const int64_t j = ds4_thread_x() + (int64_t)jj * kThreads;
            acc[jj] = __builtin_fma(w, j < D ? o[j] : 0.0, acc[jj]);
        }
    }
    finish_head(acc, den, rope, cs, D, O + (i * n_head + h) * D);
}

#if DS4_GPU_HOST_CODE
#include <cstdlib>
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {
// A launch's partial sums stay under kMaxPartBytes (a 32-token block at a million tokens of
// context would need 1.1 GB): longer calls, or calls at such contexts, run as several launches
// of fewer tokens (at least one).
constexpr int64_t kMaxPartBytes = (int64_t)256 << 20;
// The largest head group whose launch still has kMinBlocks blocks (the chunks of the call's
// longest token; fewer blocks leave multiprocessors idle), else the smallest of 4 and 1.
constexpr int64_t kMinBlocks = 128;
constexpr int kHeadGroups[] = {64, 16, 8, 4, 1};

int64_t part_doubles(int64_t tokens, int64_t n_head, int64_t D, int64_t most) {
    return tokens * n_head * chunks_of(most) * (D + 2);
}

// A positive integer from `var`, or 0 when it is unset, empty or "auto".
int64_t env_count(const char* var) {
    const char* v = std::getenv(var);
    if (!v || !*v || std::string(v) == "auto") return 0;
    char* end = nullptr;
    const long long x = std::strtoll(v, &end, 10);
    if (*end != '\0' || x < 1) {
        throw ArgumentError(DS4_GPU_WHO ": " + std::string(var) + " is '" + v + "'; expected auto or a positive integer");
    }
    return (int64_t)x;
}

// Tokens a launch: DS4KIT_GPU_ATTN_TOKENS, or as many as keep the partial sums under kMaxPartBytes.
int64_t tokens_per_launch(int64_t n, int64_t n_head, int64_t D, int64_t most) {
    int64_t t = env_count("DS4KIT_GPU_ATTN_TOKENS");
    if (!t) t = kMaxPartBytes / ((int64_t)sizeof(double) * part_doubles(1, n_head, D, most));
    return std::max<int64_t>(1, std::min(t, n));
}

// Heads a block: DS4KIT_GPU_ATTN_HEADS (the largest group at most that which divides n_head), or
// the rule above.
int head_group(int64_t tokens, int64_t n_head, int64_t nch) {
    const int64_t forced = env_count("DS4KIT_GPU_ATTN_HEADS");
    for (int g : kHeadGroups) {  // forced: 1 always qualifies
        if (n_head % g == 0 && (forced ? g <= forced : tokens * (n_head / g) * nch >= kMinBlocks)) return g;
    }
    return n_head % 4 == 0 ? 4 : 1;
}

}  // namespace

AttnScratch attention_scratch(int64_t n, int64_t n_head, int64_t D, int64_t most) {
    AttnScratch a;
    a.part = part_doubles(tokens_per_launch(n, n_head, D, most), n_head, D, most);
    return a;
}

void launch_attention(const AttnKeys& k, StepPos p0, int64_t n, const float* Q, int64_t n_head, int64_t D,
                      const float* sinks, const RopeSpec& rope, int64_t most, double* part, float* O, void* s) {
    if (n <= 0 || n_head <= 0) return;
    if (rope.n_rot > kMaxRot) {
        throw ArgumentError(DS4_GPU_WHO ": attention: n_rot " + std::to_string(rope.n_rot) + " > " +
                            std::to_string(kMaxRot));
    }
    if (D > kMaxHeadDim) {
        throw ArgumentError(DS4_GPU_WHO ": attention: head_dim " + std::to_string(D) + " > " +
                            std::to_string(kMaxHeadDim));
    }
    const int64_t nch = chunks_of(most), tokens = tokens_per_launch(n, n_head, D, most);
    if (tokens * n_head > 0x7fffffff || nch > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": attention: " + std::to_string(tokens * n_head) + " heads x " +
                            std::to_string(most) + " keys exceed the launch grid");
    }
    const Keys keys{k.ring, k.ring_rows, k.n_swa, k.comp, k.ratio, k.selected, k.top_k, k.rows, k.T};
    // Wide loads of q and the keys: rows of a multiple of 4 values from 16-byte aligned bases.
    auto a16 = [](const void* p) { return (uintptr_t)p % 16 == 0; };
    const int v4 = D % 4 == 0 && a16(Q) && (k.ring ? a16(k.ring) && (!k.comp || a16(k.comp)) : a16(k.rows)) ? 1 : 0;
    const int hg = head_group(tokens, n_head, nch);
    double* part_o = part;
    double* part_ml = part + tokens * n_head * nch * D;
    for (int64_t i0 = 0; i0 < n; i0 += tokens) {
        const int64_t m = std::min(tokens, n - i0);
        if (nch) {  // no key: the combine alone (zeros)
            ds4_launch(attention_group_kernel(hg), dim3((unsigned)(m * (n_head / hg)), (unsigned)nch), dim3(kThreads), s,
                       keys, p0, i0, Q, n_head, D, nch, v4, part_o, part_ml);
            DS4_GPU_CHECK_LAUNCH("ds4_attention_group_kernel");
        }
        ds4_launch(ds4_attention_combine_kernel, dim3((unsigned)(m * n_head)), dim3(kThreads), s, keys, p0, i0, n_head,
                   D, sinks, rope, nch, (const double*)part_o, (const double*)part_ml, O);
        DS4_GPU_CHECK_LAUNCH("ds4_attention_combine_kernel");
    }
}

}  // namespace gpu
}  // namespace ds4
#endif
