#include "model/ds4_session.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "backend/cpu/cpu_numerics.h"
#include "common/error.h"
#include "quant/quant_dot.h"

namespace ds4 {

namespace {

constexpr float kCompressorScoreInit = -1e30f;  // D; L zero-fills
// MoE weight normalisation floor (spec 6.1035e-5; ds4.c uses 2^-14).
constexpr double kMoeWeightSumFloor = 6.103515625e-5;

CompressorState fresh_compressor(int64_t ratio, int64_t width) {
    CompressorState s;
    s.rows = ratio == 4 ? 8 : ratio;
    s.width = width;
    s.kv.assign((size_t)(s.rows * width), 0.0f);
    s.score.assign((size_t)(s.rows * width), kCompressorScoreInit);
    return s;
}

double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }

// Indices of the k largest scores, best first; a tie keeps the lower index first
// (ds4.c scans with a strict '>').
std::vector<int64_t> top_k(const std::vector<double>& scores, int64_t k) {
    std::vector<int64_t> idx(scores.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return scores[(size_t)a] > scores[(size_t)b]; });
    idx.resize((size_t)std::min<int64_t>(k, (int64_t)idx.size()));
    return idx;
}

void store_f16(const float* x, int64_t n, uint16_t* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

}  // namespace

Ds4Session::Ds4Session(std::shared_ptr<const Ds4Model> model, const Ds4SessionOptions& opt)
    : model_(std::move(model)), opt_(opt) {
    const Ds4Hparams& hp = model_->hparams();
    const char* prof = std::getenv("DS4KIT_PROFILE");
    clock_.enabled = prof && *prof && std::string(prof) != "0";
    if (opt_.max_ctx < 1) throw ArgumentError("max_ctx must be at least 1, got " + std::to_string(opt_.max_ctx));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerState st;
        st.ratio = hp.compress_ratios[(size_t)il];
        st.ring.assign((size_t)(hp.n_swa * hp.head_dim), 0);
        if (st.ratio) {
            const int64_t c = st.ratio == 4 ? 2 : 1;
            st.comp = fresh_compressor(st.ratio, c * hp.head_dim);
        }
        if (st.ratio == 4) {
            st.idx_comp = fresh_compressor(4, 2 * hp.idx_head_dim);
        }
        layers_.push_back(std::move(st));
    }
}

void Ds4Session::check_tokens(const int32_t* tokens, int64_t n) const {
    const int64_t V = model_->hparams().n_vocab;
    for (int64_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || tokens[i] >= V) {
            throw ArgumentError("token id " + std::to_string(tokens[i]) + " (at index " + std::to_string(i) +
                                ") is outside the vocabulary 0.." + std::to_string(V - 1));
        }
    }
    if (pos_ + n > opt_.max_ctx) {
        throw ArgumentError("context overflow: position " + std::to_string(pos_) + " + " + std::to_string(n) +
                            " tokens exceeds max_ctx " + std::to_string(opt_.max_ctx));
    }
}

std::vector<float> Ds4Session::decode(int32_t token) { return verify({token}); }

std::vector<float> Ds4Session::verify(const std::vector<int32_t>& tokens) {
    if (tokens.empty()) throw ArgumentError("verify needs at least one token");
    std::vector<float> logits;
    forward(tokens.data(), (int64_t)tokens.size(), std::vector<bool>(tokens.size(), true), logits);
    return logits;
}

std::vector<float> Ds4Session::prefill(const std::vector<int32_t>& tokens, bool exact) {
    if (tokens.empty()) throw ArgumentError("prefill needs at least one token");
    check_tokens(tokens.data(), (int64_t)tokens.size());  // fail before any state changes
    const int64_t n = (int64_t)tokens.size(), block = exact ? 1 : kPrefillBlock;
    std::vector<float> logits;
    for (int64_t b = 0; b < n;) {
        int64_t len = std::min(block, n - b);
        // Blocks other than the last end on a ratio-4 compressor boundary, where D and
        // L split batches. This forward is exact for any split; the rule keeps the split
        // points where a fused GPU compressor will need them.
        if (b + len < n && (pos_ + len) % 4 != 0 && len > (pos_ + len) % 4) len -= (pos_ + len) % 4;
        std::vector<bool> want((size_t)len, false);
        if (b + len == n) want.back() = true;  // only the last token's logits are returned
        forward(tokens.data() + b, len, want, logits);
        b += len;
    }
    return logits;
}

void Ds4Session::forward(const int32_t* tokens, int64_t n, const std::vector<bool>& want_logits,
                         std::vector<float>& logits) {
    check_tokens(tokens, n);
    const Ds4Hparams& hp = model_->hparams();
    const Ds4Weights& w = model_->weights();
    Backend& be = model_->backend();
    const int64_t E = hp.n_embd, HC = hp.n_hc;
    // Embedding: e = token_embd[tok] (no scale); every stream starts as e.
    std::vector<float> X((size_t)(n * HC * E));
    {
        PhaseScope ps(clock_, Phase::embed);
        for (int64_t i = 0; i < n; ++i) {
            float* Xi = X.data() + i * HC * E;
            dequantize_row(w.token_embd.type, w.token_embd.row(tokens[i]), Xi, E, w.token_embd.name.c_str());
            for (int64_t h = 1; h < HC; ++h) std::copy(Xi, Xi + E, Xi + h * E);
        }
    }
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        attention_layer(il, tokens, n, X);
        ffn_layer(il, tokens, n, X);
    }
    // Output head on the tokens whose logits are wanted.
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < n; ++i) {
        if (want_logits[(size_t)i]) rows.push_back(i);
    }
    const int64_t m = (int64_t)rows.size();
    pos_ += n;
    if (m == 0) return;  // a prefill block whose logits nobody reads skips the LM head
    PhaseScope ps(clock_, Phase::head);
    std::vector<float> e((size_t)(m * E));
    for (int64_t k = 0; k < m; ++k) {
        be.hc_head(X.data() + rows[(size_t)k] * HC * E, HC, E, w.output_hc_fn, model_->output_hc_scale(),
                   model_->output_hc_base().data(), hp.hc_eps, hp.rms_eps, e.data() + k * E);
    }
    be.rms_norm(e.data(), model_->output_norm().data(), E, m, hp.rms_eps, e.data());
    const size_t off = logits.size();
    logits.resize(off + (size_t)(m * hp.n_vocab));
    be.matmul(w.output, 0, hp.n_vocab, e.data(), E, (int)m, logits.data() + off, hp.n_vocab);
}

void Ds4Session::attention_layer(int64_t il, const int32_t* tokens, int64_t n, std::vector<float>& X) {
    const Ds4Hparams& hp = model_->hparams();
    const Ds4LayerWeights& lw = model_->weights().layers[(size_t)il];
    const Ds4LayerVectors& lv = model_->layer_vectors(il);
    const RopeSpec& rope = model_->rope(il);
    Backend& be = model_->backend();
    LayerState& st = layers_[(size_t)il];
    const int64_t E = hp.n_embd, HC = hp.n_hc, H = hp.n_head, D = hp.head_dim, QR = hp.q_lora_rank;
    const int64_t r = st.ratio, C = (r == 4 ? 2 : 1) * D;

    std::vector<HcSplit> split((size_t)n);
    std::vector<float> h((size_t)(n * E));
    {
        PhaseScope ps(clock_, Phase::hc_pre);
        for (int64_t i = 0; i < n; ++i) {
            be.hc_pre(X.data() + i * HC * E, HC, E, lw.hc_attn_fn, lv.hc_attn_scale.data(), lv.hc_attn_base.data(),
                      hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps, h.data() + i * E, split[(size_t)i]);
        }
    }
    PhaseScope ps_proj(clock_, Phase::attn_proj);
    be.rms_norm(h.data(), lv.attn_norm.data(), E, n, hp.rms_eps, h.data());

    // Projections of every token of the block (columns).
    std::vector<float> q_lat((size_t)(n * QR)), Q((size_t)(n * H * D)), kv((size_t)(n * D));
    be.matmul(lw.attn_q_a, 0, QR, h.data(), E, (int)n, q_lat.data(), QR);
    be.rms_norm(q_lat.data(), lv.attn_q_a_norm.data(), QR, n, hp.rms_eps, q_lat.data());
    be.matmul(lw.attn_q_b, 0, H * D, q_lat.data(), QR, (int)n, Q.data(), H * D);
    be.rms_norm(Q.data(), nullptr, D, n * H, hp.rms_eps, Q.data());  // every head, no weight
    be.matmul(lw.attn_kv, 0, D, h.data(), E, (int)n, kv.data(), D);
    be.rms_norm(kv.data(), lv.attn_kv_a_norm.data(), D, n, hp.rms_eps, kv.data());
    std::vector<float> kappa, gate, ikappa, igate;
    const int64_t di = hp.idx_head_dim;
    if (r) {
        kappa.resize((size_t)(n * C));
        gate.resize((size_t)(n * C));
        be.matmul(lw.comp_kv, 0, C, h.data(), E, (int)n, kappa.data(), C);
        be.matmul(lw.comp_gate, 0, C, h.data(), E, (int)n, gate.data(), C);
    }
    if (r == 4) {
        ikappa.resize((size_t)(n * 2 * di));
        igate.resize((size_t)(n * 2 * di));
        be.matmul(lw.idx_comp_kv, 0, 2 * di, h.data(), E, (int)n, ikappa.data(), 2 * di);
        be.matmul(lw.idx_comp_gate, 0, 2 * di, h.data(), E, (int)n, igate.data(), 2 * di);
    }

    ps_proj.stop();

    // Sequential part: tokens in order, each sees the state its predecessors left.
    std::vector<float> O((size_t)(n * H * D)), row((size_t)std::max(D, di));
    for (int64_t i = 0; i < n; ++i) {
        PhaseScope ps_state(clock_, Phase::attn_state);
        const int64_t p = pos_ + i;
        float* Qi = Q.data() + i * H * D;
        float* kvi = kv.data() + i * D;
        be.rope_tail(Qi, H, D, (double)p, rope, false);
        be.rope_tail(kvi, 1, D, (double)p, rope, false);
        if (opt_.fp8_kv) be.fp8_kv_round_trip(kvi, D, hp.n_rot);
        store_f16(kvi, D, st.ring.data() + (p % hp.n_swa) * D);

        std::vector<int64_t> selected;
        if (r) {
            // The compressors run before attention: a row completed at p is visible at p.
            if (compressor_step(il, st.comp, lw.comp_ape, lv.comp_norm, D, kappa.data() + i * C,
                                gate.data() + i * C, p, false, row.data())) {
                st.comp_rows.resize((size_t)((st.n_comp + 1) * D));  // grows with the context used
                store_f16(row.data(), D, st.comp_rows.data() + st.n_comp * D);
                ++st.n_comp;
            }
            if (r == 4) {
                if (compressor_step(il, st.idx_comp, lw.idx_comp_ape, lv.idx_comp_norm, di,
                                    ikappa.data() + i * 2 * di, igate.data() + i * 2 * di, p, true, row.data())) {
                    st.idx_rows.resize((size_t)((st.n_idx + 1) * di));
                    store_f16(row.data(), di, st.idx_rows.data() + st.n_idx * di);
                    ++st.n_idx;
                }
                selected = indexer_select(il, h.data() + i * E, q_lat.data() + i * QR, p);
            } else {
                selected.resize((size_t)st.n_comp);
                std::iota(selected.begin(), selected.end(), 0);
            }
        }
        // Keys: raw window rows max(0, p - n_swa + 1)..p, then the selected compressed
        // rows (they may overlap the window; no dedup). V = K.
        KeyRows keys;
        for (int64_t t = std::max<int64_t>(0, p - hp.n_swa + 1); t <= p; ++t) {
            keys.rows.push_back(st.ring.data() + (t % hp.n_swa) * D);
        }
        for (int64_t c : selected) keys.rows.push_back(st.comp_rows.data() + c * D);
        ps_state.stop();
        PhaseScope ps_attn(clock_, Phase::attention);
        float* Oi = O.data() + i * H * D;
        be.attention(Qi, H, D, keys, lv.attn_sinks.data(), Oi);
        be.rope_tail(Oi, H, D, (double)p, rope, true);
    }
    PhaseScope ps_out(clock_, Phase::attn_out);

    // Grouped output: z_g = W_oa[g] (heads of group g), y = W_ob z.
    const int64_t G = hp.o_groups, R = hp.o_lora_rank, group_in = H * D / G;
    std::vector<float> z((size_t)(n * G * R)), y((size_t)(n * E));
    for (int64_t g = 0; g < G; ++g) {
        be.matmul(lw.attn_output_a, g * R, R, O.data() + g * group_in, H * D, (int)n, z.data() + g * R, G * R);
    }
    be.matmul(lw.attn_output_b, 0, E, z.data(), G * R, (int)n, y.data(), E);
    ps_out.stop();
    PhaseScope ps_post(clock_, Phase::hc_post);
    std::vector<float> Xi((size_t)(HC * E));
    for (int64_t i = 0; i < n; ++i) {
        std::copy(X.begin() + i * HC * E, X.begin() + (i + 1) * HC * E, Xi.begin());
        be.hc_post(y.data() + i * E, Xi.data(), HC, E, split[(size_t)i], X.data() + i * HC * E);
    }
    (void)tokens;
}

bool Ds4Session::compressor_step(int64_t il, CompressorState& st, const WeightView& ape,
                                 const std::vector<float>& norm, int64_t Dc, const float* kappa, const float* gate,
                                 int64_t p, bool indexer, float* row) {
    const Ds4Hparams& hp = model_->hparams();
    Backend& be = model_->backend();
    const int64_t r = layers_[(size_t)il].ratio, W = st.width;
    const int64_t slot = r == 4 ? 4 + p % 4 : p % r;
    std::vector<float> ape_row((size_t)W);
    dequantize_row(ape.type, ape.row(p % r), ape_row.data(), W, ape.name.c_str());
    for (int64_t j = 0; j < W; ++j) {
        st.kv[(size_t)(slot * W + j)] = kappa[j];
        st.score[(size_t)(slot * W + j)] = gate[j] + ape_row[(size_t)j];
    }
    if ((p + 1) % r) return false;
    be.compressor_pool(st.kv.data(), st.score.data(), W, r, Dc, row);
    be.rms_norm(row, norm.data(), Dc, 1, hp.rms_eps, row);
    be.rope_tail(row, 1, Dc, (double)(p + 1 - r), model_->rope(il), false);
    if (indexer) {
        be.indexer_transform(row, 1, Dc, opt_.indexer_fp4);
    } else if (opt_.fp8_kv) {
        be.fp8_kv_round_trip(row, Dc, hp.n_rot);
    }
    if (r == 4) {
        // The current window becomes the previous one.
        std::copy(st.kv.begin() + 4 * W, st.kv.end(), st.kv.begin());
        std::copy(st.score.begin() + 4 * W, st.score.end(), st.score.begin());
    }
    return true;
}

std::vector<int64_t> Ds4Session::indexer_select(int64_t il, const float* h, const float* q_lat, int64_t p) {
    const Ds4Hparams& hp = model_->hparams();
    const Ds4LayerWeights& lw = model_->weights().layers[(size_t)il];
    Backend& be = model_->backend();
    const LayerState& st = layers_[(size_t)il];
    const int64_t n_c = st.n_idx;
    std::vector<int64_t> sel;
    if (n_c <= hp.idx_top_k) {
        sel.resize((size_t)n_c);
        std::iota(sel.begin(), sel.end(), 0);
        return sel;
    }
    const int64_t Hi = hp.idx_n_head, di = hp.idx_head_dim;
    std::vector<float> q((size_t)(Hi * di)), wh((size_t)Hi);
    be.matmul(lw.idx_q_b, 0, Hi * di, q_lat, hp.q_lora_rank, 1, q.data(), Hi * di);
    be.rope_tail(q.data(), Hi, di, (double)p, model_->rope(il), false);
    be.indexer_transform(q.data(), Hi, di, opt_.indexer_fp4);
    be.matmul(lw.idx_proj, 0, Hi, h, hp.n_embd, 1, wh.data(), Hi);
    const double s = 1.0 / std::sqrt((double)(di * Hi));
    for (float& v : wh) v = (float)(v * s);
    std::vector<double> scores((size_t)n_c);
    be.indexer_scores(q.data(), wh.data(), Hi, di, st.idx_rows.data(), n_c, scores.data());
    sel = top_k(scores, hp.idx_top_k);
    std::sort(sel.begin(), sel.end());
    return sel;
}

void Ds4Session::ffn_layer(int64_t il, const int32_t* tokens, int64_t n, std::vector<float>& X) {
    const Ds4Hparams& hp = model_->hparams();
    const Ds4LayerWeights& lw = model_->weights().layers[(size_t)il];
    const Ds4LayerVectors& lv = model_->layer_vectors(il);
    Backend& be = model_->backend();
    const int64_t E = hp.n_embd, HC = hp.n_hc, NX = hp.n_expert, K = hp.n_expert_used;

    std::vector<HcSplit> split((size_t)n);
    std::vector<float> h2((size_t)(n * E));
    {
        PhaseScope ps(clock_, Phase::hc_pre);
        for (int64_t i = 0; i < n; ++i) {
            be.hc_pre(X.data() + i * HC * E, HC, E, lw.hc_ffn_fn, lv.hc_ffn_scale.data(), lv.hc_ffn_base.data(),
                      hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps, h2.data() + i * E, split[(size_t)i]);
        }
    }
    PhaseScope ps_router(clock_, Phase::router);
    be.rms_norm(h2.data(), lv.ffn_norm.data(), E, n, hp.rms_eps, h2.data());
    std::vector<float> gl((size_t)(n * NX));
    be.matmul(lw.ffn_gate_inp, 0, NX, h2.data(), E, (int)n, gl.data(), NX);

    // Routing per token.
    std::vector<int32_t> experts((size_t)(n * K));
    std::vector<float> weights((size_t)(n * K));
    for (int64_t i = 0; i < n; ++i) {
        int32_t* ex = experts.data() + i * K;
        std::vector<double> s((size_t)NX);
        for (int64_t e = 0; e < NX; ++e) s[(size_t)e] = std::sqrt(softplus(gl[(size_t)(i * NX + e)]));
        if (il < hp.n_hash_layers) {
            // Expert ids were range-checked when the model was loaded.
            std::memcpy(ex, lw.ffn_gate_tid2eid.row(tokens[i]), (size_t)K * 4);
        } else {
            // The bias only selects; the weights use the unbiased s.
            std::vector<double> biased(s);
            for (int64_t e = 0; e < NX; ++e) biased[(size_t)e] += lv.exp_probs_b[(size_t)e];
            const std::vector<int64_t> top = top_k(biased, K);
            for (int64_t k = 0; k < K; ++k) ex[k] = (int32_t)top[(size_t)k];
        }
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k) sum += s[(size_t)ex[k]];
        const double norm = hp.expert_weights_norm ? 1.0 / std::max(sum, kMoeWeightSumFloor) : 1.0;
        for (int64_t k = 0; k < K; ++k) {
            weights[(size_t)(i * K + k)] = (float)(s[(size_t)ex[k]] * norm * hp.expert_weights_scale);
        }
    }
    ps_router.stop();
    std::vector<float> y((size_t)(n * E)), Xi((size_t)(HC * E));
    {
        PhaseScope ps(clock_, Phase::moe);
        be.moe(lw, h2.data(), n, experts.data(), weights.data(), K, hp.swiglu_clamp_exp[(size_t)il],
               hp.swiglu_clamp_shexp[(size_t)il], y.data());
    }
    PhaseScope ps_post(clock_, Phase::hc_post);
    for (int64_t i = 0; i < n; ++i) {
        std::copy(X.begin() + i * HC * E, X.begin() + (i + 1) * HC * E, Xi.begin());
        be.hc_post(y.data() + i * E, Xi.data(), HC, E, split[(size_t)i], X.data() + i * HC * E);
    }
}

}  // namespace ds4
