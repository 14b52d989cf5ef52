// Attention and indexer selection on the CPU over the sequence state. A block's
// tokens are independent here (the state walk already happened), so the work is
// split over (token, group of 4 heads) and over tokens; every value has one
// reduction order, whatever the split (attn_kernels.h states it).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_seq_state.h"

namespace ds4 {

namespace {

// Key rows of token i at position p: the window max(0, p - n_swa + 1)..p, then its
// compressed rows ((p + 1) / ratio exist; an indexer selection picks among them).
void gather_keys(const CpuSeqState& S, int64_t il, int64_t p, int64_t i, const CompRowView& comp,
                 std::vector<const float*>& rows) {
    rows.clear();
    for (int64_t t = std::max<int64_t>(0, p - S.shape().n_swa + 1); t <= p; ++t) rows.push_back(S.ring_row(il, t));
    if (!comp.ratio) return;
    const CpuLayerState& L = S.layers[(size_t)il];
    const int64_t D = S.shape().head_dim;
    const int64_t visible = (p + 1) / comp.ratio;
    const int64_t count = comp.selected ? std::min(visible, comp.top_k) : visible;
    for (int64_t k = 0; k < count; ++k) {
        const int64_t c = comp.selected ? comp.selected.get()[i * comp.top_k + k] : k;
        rows.push_back(L.comp_rows.data() + c * D);
    }
}

}  // namespace

namespace {

// Heads h0 .. h0 + nh - 1 (nh <= 4) of one token over its key rows (V = K): the one
// inner loop both attention() and attention_rows() run, so they share their bits.
void attend_heads(const AttnKernels& ak, CpuBackend::Scratch& W, const float* Qi, int64_t h0, int nh, int64_t D,
                  const float* sinks, double inv_sqrt_d, int64_t n_rot, float* Oi) {
    const int64_t T = (int64_t)W.rows.size();
    W.d0.resize((size_t)(4 * D));
    W.d1.resize((size_t)(4 * T));
    double* q = W.d0.data();
    double* s = W.d1.data();
    for (int64_t k = 0; k < nh * D; ++k) q[k] = Qi[h0 * D + k];
    ak.scores4(q, nh, W.rows.data(), T, D, s);
    double den[4];
    for (int j = 0; j < nh; ++j) {
        const int64_t h = h0 + j;
        double* sh = s + j * T;
        double mx = sinks[h];
        for (int64_t t = 0; t < T; ++t) {
            sh[t] *= inv_sqrt_d;
            mx = std::max(mx, sh[t]);
        }
        den[j] = std::exp((double)sinks[h] - mx);  // the sink adds mass, carries no value
        for (int64_t t = 0; t < T; ++t) {
            sh[t] = std::exp(sh[t] - mx);  // now the weight
            den[j] += sh[t];
        }
    }
    ak.weighted_sums4(s, nh, W.rows.data(), T, D, q);  // q is no longer needed: the sums land there
    for (int j = 0; j < nh; ++j) {
        float* o = Oi + (h0 + j) * D;
        for (int64_t k = 0; k < D; ++k) o[k] = (float)(q[j * D + k] / den[j]);
        cpu_rope_row(o, D, W.rope_cs.data(), n_rot, true);
    }
}

}  // namespace

void CpuBackend::attention(const SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> Qd,
                           int64_t n_head, int64_t D, const CompRowView& comp, const WeightView& sinks_w,
                           const RopeSpec& rope, Dev<float> Od) {
    const CpuSeqState& S = cpu_state(st);
    const float *Q = Qd.get(), *sinks = vec(sinks_w);
    float* O = Od.get();
    const AttnKernels& ak = attn_kernels();
    const double inv_sqrt_d = 1.0 / std::sqrt((double)D);
    // Heads in groups of 4 (a group reads each key row once); a head's bits do not
    // depend on its group or on which token shares the thread.
    const int64_t n_groups = (n_head + 3) / 4;
    pool_.parallel_for(n * n_groups, 1, [&](int64_t b, int64_t e) {
        Scratch& W = scratch();
        int64_t keys_of = -1;
        for (int64_t item = b; item < e; ++item) {
            const int64_t i = item / n_groups, g = item % n_groups, p = p0 + i;
            if (keys_of != i) {  // a new token: its keys and its inverse-RoPE angles
                gather_keys(S, il, p, i, comp, W.rows);
                W.rope_cs.resize((size_t)rope.n_rot);
                cpu_rope_cos_sin((double)p, rope, W.rope_cs.data());
                keys_of = i;
            }
            const int64_t h0 = g * 4;
            attend_heads(ak, W, Q + i * n_head * D, h0, (int)std::min<int64_t>(4, n_head - h0), D, sinks, inv_sqrt_d,
                         rope.n_rot, O + i * n_head * D);
        }
    });
}

void CpuBackend::attention_rows(Dev<const float> Qd, int64_t n, int64_t n_head, int64_t D, Dev<const float> Kd,
                                int64_t T, const WeightView& sinks_w, const RopeSpec& rope, int64_t pos0,
                                Dev<float> Od) {
    const float *Q = Qd.get(), *K = Kd.get(), *sinks = vec(sinks_w);
    float* O = Od.get();
    const AttnKernels& ak = attn_kernels();
    const double inv_sqrt_d = 1.0 / std::sqrt((double)D);
    const int64_t n_groups = (n_head + 3) / 4;
    pool_.parallel_for(n * n_groups, 1, [&](int64_t b, int64_t e) {
        Scratch& W = scratch();
        W.rows.resize((size_t)T);  // every token sees every row, in order
        for (int64_t t = 0; t < T; ++t) W.rows[(size_t)t] = K + t * D;
        int64_t angles_of = -1;
        for (int64_t item = b; item < e; ++item) {
            const int64_t i = item / n_groups, g = item % n_groups;
            if (angles_of != i) {
                W.rope_cs.resize((size_t)rope.n_rot);
                cpu_rope_cos_sin((double)(pos0 + i), rope, W.rope_cs.data());
                angles_of = i;
            }
            const int64_t h0 = g * 4;
            attend_heads(ak, W, Q + i * n_head * D, h0, (int)std::min<int64_t>(4, n_head - h0), D, sinks, inv_sqrt_d,
                         rope.n_rot, O + i * n_head * D);
        }
    });
}

void CpuBackend::indexer_select(const SeqState& st, int64_t il, int64_t p0, Dev<const float> qd,
                                Dev<const float> wd, int64_t n, int64_t n_head, int64_t d, int64_t top_k,
                                Dev<int32_t> selectedd) {
    const CpuSeqState& S = cpu_state(st);
    const float *q = qd.get(), *w = wd.get();
    int32_t* selected = selectedd.get();
    const CpuLayerState& L = S.layers[(size_t)il];
    const AttnKernels& ak = attn_kernels();
    pool_.parallel_for(n, 1, [&](int64_t b, int64_t e) {
        Scratch& W = scratch();
        for (int64_t i = b; i < e; ++i) {
            const int64_t n_c = (p0 + i + 1) / 4;  // indexer rows token i sees
            int32_t* sel = selected + i * top_k;
            if (n_c <= top_k) {
                std::iota(sel, sel + n_c, 0);
                continue;
            }
            W.d0.resize((size_t)(n_head * d));
            W.d1.resize((size_t)n_c);
            double* qd = W.d0.data();
            double* scores = W.d1.data();
            for (int64_t k = 0; k < n_head * d; ++k) qd[k] = q[i * n_head * d + k];
            const float* wi = w + i * n_head;
            for (int64_t c = 0; c < n_c; ++c) {
                const float* row = L.idx_rows.data() + c * d;
                double acc = 0.0;
                for (int64_t h = 0; h < n_head; ++h) {
                    const double dot = ak.dot(qd + h * d, row, d);
                    acc += (double)wi[h] * std::max(dot, 0.0);
                }
                scores[c] = acc;
            }
            // The k best, a tie keeping the lower row first (ds4.c scans with a strict '>'),
            // then in row order.
            W.order.resize((size_t)n_c);
            std::iota(W.order.begin(), W.order.end(), 0);
            std::partial_sort(W.order.begin(), W.order.begin() + top_k, W.order.end(), [&](int32_t a, int32_t c) {
                return scores[a] > scores[c] || (scores[a] == scores[c] && a < c);
            });
            std::copy(W.order.begin(), W.order.begin() + top_k, sel);
            std::sort(sel, sel + top_k);
        }
    });
}

}  // namespace ds4
