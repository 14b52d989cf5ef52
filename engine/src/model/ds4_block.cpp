#include "model/ds4_block.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace ds4 {

RouteParams layer_route_params(const Ds4Hparams& hp, const Ds4LayerWeights& lw, int64_t il) {
    RouteParams rp;
    rp.n_expert = hp.n_expert;
    rp.n_used = hp.n_expert_used;
    rp.hash_table = il < hp.n_hash_layers ? &lw.ffn_gate_tid2eid : nullptr;
    rp.bias = il < hp.n_hash_layers ? nullptr : &lw.exp_probs_b;
    rp.normalise = hp.expert_weights_norm;
    rp.scale = hp.expert_weights_scale;
    return rp;
}


Ds4Activations::Ds4Activations(Backend& be, const Ds4Hparams& hp, int64_t B) : max_tokens(B) {
    const int64_t E = hp.n_embd, HC = hp.n_hc, H = hp.n_head, D = hp.head_dim, di = hp.idx_head_dim;
    const int64_t C = 2 * D;  // the widest compressor (ratio 4)
    auto floats = [&](int64_t n) {
        owned_.push_back(be.alloc((size_t)std::max<int64_t>(n, 1) * sizeof(float)));
        return owned_.back()->as<float>();
    };
    X = floats(B * HC * E);
    X2 = floats(B * HC * E);
    h = floats(B * E);
    q_lat = floats(B * hp.q_lora_rank);
    Q = floats(B * H * D);
    kv = floats(B * D);
    kappa = floats(B * C);
    gate = floats(B * C);
    ikappa = floats(B * 2 * di);
    igate = floats(B * 2 * di);
    iq = floats(B * hp.idx_n_head * di);
    iw = floats(B * hp.idx_n_head);
    O = floats(B * H * D);
    z = floats(B * hp.o_groups * hp.o_lora_rank);
    y = floats(B * E);
    gl = floats(B * hp.n_expert);
    ew = floats(B * hp.n_expert_used);
    e = floats(B * E);
    owned_.push_back(be.alloc((size_t)std::max<int64_t>(B * hc_split_size(HC), 1) * sizeof(double)));
    split = owned_.back()->as<double>();
    auto ints = [&](int64_t n) {
        owned_.push_back(be.alloc((size_t)std::max<int64_t>(n, 1) * sizeof(int32_t)));
        return owned_.back()->as<int32_t>();
    };
    tokens = ints(B);
    experts = ints(B * hp.n_expert_used);
    selected = ints(B * std::max<int64_t>(hp.idx_top_k, 1));
}

void Ds4BlockRunner::embed(const Ds4Weights& w, Ds4Activations& a, int64_t n) {
    PhaseScope ps(clock_, Phase::embed);
    be_.embed(w.token_embd, a.tokens, n, hp_.n_hc, a.X);  // no scale; every stream starts as the row
}

void Ds4BlockRunner::attn_project(const Ds4LayerWeights& lw, Ds4Activations& a, int64_t n) {
    const int64_t E = hp_.n_embd, HC = hp_.n_hc, H = hp_.n_head, D = hp_.head_dim, QR = hp_.q_lora_rank;
    const int64_t r = lw.ratio, C = (r == 4 ? 2 : 1) * D, di = hp_.idx_head_dim;
    {
        PhaseScope ps(clock_, Phase::hc_pre);  // with the attention norm of the collapsed row
        be_.norm_feeds(lw.attn_q_a);           // the projections below read h next
        be_.hc_pre_norm(a.X, n, HC, E, lw.hc_attn_fn, lw.hc_attn_scale, lw.hc_attn_base, hp_.sinkhorn_iters,
                        hp_.hc_eps, hp_.rms_eps, lw.attn_norm, a.h, a.split);
    }
    // Projections of every token of the block (columns): first every matrix that reads the
    // normalised input h (one pass on a backend that can), then the query's second matrix.
    PhaseScope ps(clock_, Phase::attn_proj);
    std::vector<MatmulOut> from_h = {{&lw.attn_q_a, a.q_lat, QR}, {&lw.attn_kv, a.kv, D}};
    if (r) from_h.insert(from_h.end(), {{&lw.comp_kv, a.kappa, C}, {&lw.comp_gate, a.gate, C}});
    if (r == 4) from_h.insert(from_h.end(), {{&lw.idx_comp_kv, a.ikappa, 2 * di}, {&lw.idx_comp_gate, a.igate, 2 * di}});
    be_.matmul_shared_x(from_h, a.h, E, (int)n);
    be_.norm_feeds(lw.attn_q_b);
    be_.rms_norm(a.q_lat, &lw.attn_q_a_norm, QR, n, hp_.rms_eps, a.q_lat);
    be_.matmul(lw.attn_q_b, 0, H * D, a.q_lat, QR, (int)n, a.Q, H * D);
}

void Ds4BlockRunner::attn_norms(const Ds4LayerWeights& lw, Ds4Activations& a, int64_t n) {
    const int64_t H = hp_.n_head, D = hp_.head_dim;
    be_.rms_norm(a.Q, nullptr, D, n * H, hp_.rms_eps, a.Q);  // every head, no weight
    be_.rms_norm(a.kv, &lw.attn_kv_a_norm, D, n, hp_.rms_eps, a.kv);
}

void Ds4BlockRunner::attn_causal(const Ds4LayerWeights& lw, int64_t il, const RopeSpec& rope, SeqState& st,
                                 const Ds4Numerics& nx, Ds4Activations& a, int64_t p0, int64_t n) {
    for (int64_t t0 = 0; t0 < n;) {
        const int64_t len = ratio4_piece(p0 + t0, n - t0, st.shape().max_block);
        attn_causal_step(lw, il, rope, st, nx, a, t0, p0 + t0, len);
        t0 += len;
    }
}

void Ds4BlockRunner::attn_causal_step(const Ds4LayerWeights& lw, int64_t il, const RopeSpec& rope, SeqState& st,
                                      const Ds4Numerics& nx, Ds4Activations& a, int64_t t0, int64_t p0, int64_t n) {
    const int64_t E = hp_.n_embd, H = hp_.n_head, D = hp_.head_dim, QR = hp_.q_lora_rank;
    const int64_t r = lw.ratio, C = (r == 4 ? 2 : 1) * D, di = hp_.idx_head_dim, Hi = hp_.idx_n_head;
    // The step's tokens in the block's buffers (iq, iw and selected are the step's own scratch).
    const Dev<float> Q = a.Q + t0 * H * D, kv = a.kv + t0 * D, q_lat = a.q_lat + t0 * QR, h = a.h + t0 * E;
    // State: the step's KV rows and compressor steps, tokens in order; token i's
    // view is the window up to its position and the rows that exist once its step
    // ran (the compressors run before attention: a row completed at p is visible at p).
    CompRowView comp;
    {
        PhaseScope ps(clock_, Phase::attn_state);
        // The query heads' and the KV row's norms, RoPE, the KV row's FP8 rounding and its store.
        be_.attention_inputs(st, il, p0, n, Q, H, kv, lw.attn_kv_a_norm, D, hp_.rms_eps, rope, nx.fp8_kv, hp_.n_rot);
        if (r) {
            CompressorParams cp;
            cp.ape = &lw.comp_ape;
            cp.norm = &lw.comp_norm;
            cp.rope = &rope;
            cp.row_dim = D;
            cp.n_rot = hp_.n_rot;
            cp.rms_eps = hp_.rms_eps;
            cp.fp8_kv = nx.fp8_kv;
            cp.indexer_fp4 = nx.indexer_fp4;
            be_.compress(st, il, p0, n, a.kappa + t0 * C, a.gate + t0 * C, C, cp);
            comp.ratio = r;  // ratio 128: every row so far
            if (r == 4) {
                cp.ape = &lw.idx_comp_ape;
                cp.norm = &lw.idx_comp_norm;
                cp.row_dim = di;
                cp.indexer = true;
                be_.compress(st, il, p0, n, a.ikappa + t0 * 2 * di, a.igate + t0 * 2 * di, 2 * di, cp);
                // The indexer picks top_k rows once a token sees more than that; the
                // step's last token sees the most, (p0 + n) / 4.
                if ((p0 + n) / 4 > hp_.idx_top_k) {
                    be_.matmul(lw.idx_q_b, 0, Hi * di, q_lat, QR, (int)n, a.iq, Hi * di);
                    be_.rope_tail(a.iq, n, Hi, di, p0, rope, false);
                    be_.indexer_transform(a.iq, n * Hi, di, nx.indexer_fp4);
                    be_.matmul(lw.idx_proj, 0, Hi, h, E, (int)n, a.iw, Hi);
                    be_.scale(a.iw, n * Hi, 1.0 / std::sqrt((double)(di * Hi)));
                    be_.indexer_select(st, il, p0, a.iq, a.iw, n, Hi, di, hp_.idx_top_k, a.selected);
                    comp.selected = a.selected;
                    comp.top_k = hp_.idx_top_k;
                }
            }
        }
    }
    PhaseScope ps(clock_, Phase::attention);
    be_.attention(st, il, p0, n, Q, H, D, comp, lw.attn_sinks, rope, a.O + t0 * H * D);
}

void Ds4BlockRunner::attn_output(const Ds4LayerWeights& lw, Ds4Activations& a, int64_t n) {
    const int64_t E = hp_.n_embd, HC = hp_.n_hc, H = hp_.n_head, D = hp_.head_dim;
    {
        // Grouped output: z_g = W_oa[g] (heads of group g), y = W_ob z.
        PhaseScope ps(clock_, Phase::attn_out);
        const int64_t G = hp_.o_groups, R = hp_.o_lora_rank, group_in = H * D / G;
        be_.matmul_grouped(lw.attn_output_a, G, R, a.O, group_in, H * D, (int)n, a.z, G * R);
        be_.matmul(lw.attn_output_b, 0, E, a.z, G * R, (int)n, a.y, E);
    }
    PhaseScope ps(clock_, Phase::hc_post);
    be_.hc_post(a.y, a.X, n, HC, E, a.split, a.X2);
    std::swap(a.X, a.X2);
}

void Ds4BlockRunner::ffn(const Ds4LayerWeights& lw, int64_t il, Ds4Activations& a, int64_t n) {
    const int64_t E = hp_.n_embd, HC = hp_.n_hc, NX = hp_.n_expert, K = hp_.n_expert_used;
    {
        PhaseScope ps(clock_, Phase::hc_pre);  // with the FFN norm of the collapsed row
        be_.hc_pre_norm(a.X, n, HC, E, lw.hc_ffn_fn, lw.hc_ffn_scale, lw.hc_ffn_base, hp_.sinkhorn_iters, hp_.hc_eps,
                        hp_.rms_eps, lw.ffn_norm, a.h, a.split);
    }
    {
        PhaseScope ps(clock_, Phase::router);
        be_.matmul(lw.ffn_gate_inp, 0, NX, a.h, E, (int)n, a.gl, NX);
        be_.route(a.gl, a.tokens, n, layer_route_params(hp_, lw, il), a.experts, a.ew);
    }
    {
        PhaseScope ps(clock_, Phase::moe);
        be_.moe(lw.ffn, a.h, n, a.experts, a.ew, K, hp_.swiglu_clamp_exp[(size_t)il], hp_.swiglu_clamp_shexp[(size_t)il],
                a.y);
    }
    PhaseScope ps(clock_, Phase::hc_post);
    be_.hc_post(a.y, a.X, n, HC, E, a.split, a.X2);
    std::swap(a.X, a.X2);
}

void Ds4BlockRunner::capture(const Ds4Activations& a, int64_t n, Dev<float> out, int64_t ldo) {
    be_.hc_mean(a.X, n, hp_.n_hc, hp_.n_embd, out, ldo);
}

void Ds4BlockRunner::head(const Ds4Weights& w, Dev<const float> X, Ds4Activations& a, int64_t m, Dev<float> logits) {
    PhaseScope ps(clock_, Phase::head);
    const int64_t E = hp_.n_embd;
    be_.hc_head(X, m, hp_.n_hc, E, w.output_hc_fn, w.output_hc_scale, w.output_hc_base, hp_.hc_eps, hp_.rms_eps, a.e);
    be_.norm_feeds(w.output);
    be_.rms_norm(a.e, &w.output_norm, E, m, hp_.rms_eps, a.e);
    be_.matmul(w.output, 0, hp_.n_vocab, a.e, E, (int)m, logits, hp_.n_vocab);
}

}  // namespace ds4
