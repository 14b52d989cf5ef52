#include "model/ds4_session.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "common/error.h"
#include "quant/quant_dot.h"

namespace ds4 {

namespace {

// MoE weight normalisation floor (spec 6.1035e-5; ds4.c uses 2^-14).
constexpr double kMoeWeightSumFloor = 6.103515625e-5;

double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }

bool profile_from_env() {
    const char* v = std::getenv("DS4KIT_PROFILE");
    return v && *v && std::string(v) != "0";
}

}  // namespace

Ds4Session::Ds4Session(std::shared_ptr<const Ds4Model> model, const Ds4SessionOptions& opt)
    : model_(std::move(model)), opt_(opt) {
    const Ds4Hparams& hp = model_->hparams();
    if (opt_.max_ctx < 1) throw ArgumentError("max_ctx must be at least 1, got " + std::to_string(opt_.max_ctx));
    clock_.enabled = profile_from_env();
    SeqShape shape;
    shape.ratios = hp.compress_ratios;
    shape.n_swa = hp.n_swa;
    shape.head_dim = hp.head_dim;
    shape.idx_dim = hp.idx_head_dim;
    shape.max_ctx = opt_.max_ctx;
    shape.max_block = kBlock;
    state_ = model_->backend().new_seq_state(shape);

    const int64_t B = kBlock, E = hp.n_embd, HC = hp.n_hc, H = hp.n_head, D = hp.head_dim, di = hp.idx_head_dim;
    const int64_t C = 2 * D;  // the widest compressor (ratio 4)
    auto sz = [](int64_t n) { return (size_t)std::max<int64_t>(n, 1); };
    b_.X.resize(sz(B * HC * E));
    b_.X2.resize(sz(B * HC * E));
    b_.h.resize(sz(B * E));
    b_.q_lat.resize(sz(B * hp.q_lora_rank));
    b_.Q.resize(sz(B * H * D));
    b_.kv.resize(sz(B * D));
    b_.kappa.resize(sz(B * C));
    b_.gate.resize(sz(B * C));
    b_.ikappa.resize(sz(B * 2 * di));
    b_.igate.resize(sz(B * 2 * di));
    b_.iq.resize(sz(B * hp.idx_n_head * di));
    b_.iw.resize(sz(B * hp.idx_n_head));
    b_.O.resize(sz(B * H * D));
    b_.z.resize(sz(B * hp.o_groups * hp.o_lora_rank));
    b_.y.resize(sz(B * E));
    b_.gl.resize(sz(B * hp.n_expert));
    b_.ew.resize(sz(B * hp.n_expert_used));
    b_.e.resize(sz(B * E));
    b_.split.resize(sz(B * hc_split_size(HC)));
    b_.route_s.resize(sz(hp.n_expert));
    b_.route_b.resize(sz(hp.n_expert));
    b_.experts.resize(sz(B * hp.n_expert_used));
    b_.selected.resize(sz(B * hp.idx_top_k));
    b_.order.resize(sz(hp.n_expert));
    b_.comp_after.resize(sz(B));
    b_.idx_after.resize(sz(B));
    b_.n_selected.resize(sz(B));
    b_.want.resize(sz(B));
}

Ds4Snapshot Ds4Session::snapshot() const {
    Ds4Snapshot s;
    s.owner_model = model_.get();
    s.pos = pos_;
    s.max_ctx = opt_.max_ctx;
    s.fp8_kv = opt_.fp8_kv;
    s.indexer_fp4 = opt_.indexer_fp4;
    s.state = state_->clone();
    return s;
}

void Ds4Session::restore(const Ds4Snapshot& snap) {
    if (!snap.state || snap.owner_model != model_.get()) {
        throw ArgumentError("restore: the snapshot was taken from a session of another model");
    }
    if (snap.max_ctx != opt_.max_ctx || snap.fp8_kv != opt_.fp8_kv || snap.indexer_fp4 != opt_.indexer_fp4) {
        throw ArgumentError("restore: the snapshot's session options (max_ctx " + std::to_string(snap.max_ctx) +
                            ", fp8_kv " + std::to_string(snap.fp8_kv) + ", indexer_fp4 " +
                            std::to_string(snap.indexer_fp4) + ") differ from this session's (max_ctx " +
                            std::to_string(opt_.max_ctx) + ", fp8_kv " + std::to_string(opt_.fp8_kv) +
                            ", indexer_fp4 " + std::to_string(opt_.indexer_fp4) + ")");
    }
    state_ = snap.state->clone();
    pos_ = snap.pos;
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

namespace {
const bool kAllRows[Ds4Session::kBlock] = {true, true, true, true, true, true, true, true, true, true, true,
                                           true, true, true, true, true, true, true, true, true, true, true,
                                           true, true, true, true, true, true, true, true, true, true};
}  // namespace

std::vector<float> Ds4Session::decode(int32_t token) {
    std::vector<float> logits;  // the one allocation per call: the result handed back
    logits.reserve((size_t)model_->hparams().n_vocab);
    forward(&token, 1, kAllRows, logits);
    return logits;
}

std::vector<float> Ds4Session::verify(const std::vector<int32_t>& tokens) {
    if (tokens.empty()) throw ArgumentError("verify needs at least one token");
    const int64_t n = (int64_t)tokens.size();
    check_tokens(tokens.data(), n);  // fail before any state changes
    std::vector<float> logits;
    logits.reserve((size_t)(n * model_->hparams().n_vocab));
    for (int64_t b = 0; b < n; b += kBlock) forward(tokens.data() + b, std::min(kBlock, n - b), kAllRows, logits);
    return logits;
}

std::vector<float> Ds4Session::prefill(const std::vector<int32_t>& tokens, bool exact) {
    if (tokens.empty()) throw ArgumentError("prefill needs at least one token");
    check_tokens(tokens.data(), (int64_t)tokens.size());  // fail before any state changes
    const int64_t n = (int64_t)tokens.size(), block = exact ? 1 : kBlock;
    std::vector<float> logits;
    bool want[kBlock];
    for (int64_t b = 0; b < n;) {
        int64_t len = std::min(block, n - b);
        // Blocks other than the last end on a ratio-4 compressor boundary, where D and
        // L split batches. This forward is exact for any split; the rule keeps the split
        // points where a fused GPU compressor will need them.
        if (b + len < n && (pos_ + len) % 4 != 0 && len > (pos_ + len) % 4) len -= (pos_ + len) % 4;
        std::fill(want, want + len, false);
        if (b + len == n) want[len - 1] = true;  // only the last token's logits are returned
        forward(tokens.data() + b, len, want, logits);
        b += len;
    }
    return logits;
}

void Ds4Session::forward(const int32_t* tokens, int64_t n, const bool* want_logits, std::vector<float>& logits) {
    check_tokens(tokens, n);
    const Ds4Hparams& hp = model_->hparams();
    const Ds4Weights& w = model_->weights();
    Backend& be = model_->backend();
    const int64_t E = hp.n_embd, HC = hp.n_hc;
    // Embedding: e = token_embd[tok] (no scale); every stream starts as e.
    {
        PhaseScope ps(clock_, Phase::embed);
        for (int64_t i = 0; i < n; ++i) {
            float* Xi = b_.X.data() + i * HC * E;
            dequantize_row(w.token_embd.type, w.token_embd.row(tokens[i]), Xi, E, w.token_embd.name.c_str());
            for (int64_t h = 1; h < HC; ++h) std::copy(Xi, Xi + E, Xi + h * E);
        }
    }
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        attention_layer(il, n);
        ffn_layer(il, tokens, n);
    }
    pos_ += n;
    // Output head on the tokens whose logits are wanted (gathered into X2).
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (!want_logits[i]) continue;
        std::copy(b_.X.begin() + i * HC * E, b_.X.begin() + (i + 1) * HC * E, b_.X2.begin() + m * HC * E);
        ++m;
    }
    if (m == 0) return;  // a prefill block whose logits nobody reads skips the LM head
    PhaseScope ps(clock_, Phase::head);
    float* e = b_.e.data();
    be.hc_head(b_.X2.data(), m, HC, E, w.output_hc_fn, model_->output_hc_scale(), model_->output_hc_base().data(),
               hp.hc_eps, hp.rms_eps, e);
    be.rms_norm(e, model_->output_norm().data(), E, m, hp.rms_eps, e);
    const size_t off = logits.size();
    logits.resize(off + (size_t)(m * hp.n_vocab));
    be.matmul(w.output, 0, hp.n_vocab, e, E, (int)m, logits.data() + off, hp.n_vocab);
}

void Ds4Session::attention_layer(int64_t il, int64_t n) {
    const Ds4Hparams& hp = model_->hparams();
    const Ds4LayerWeights& lw = model_->weights().layers[(size_t)il];
    const Ds4LayerVectors& lv = model_->layer_vectors(il);
    const RopeSpec& rope = model_->rope(il);
    Backend& be = model_->backend();
    const int64_t E = hp.n_embd, HC = hp.n_hc, H = hp.n_head, D = hp.head_dim, QR = hp.q_lora_rank;
    const int64_t r = lw.ratio, C = (r == 4 ? 2 : 1) * D, di = hp.idx_head_dim, Hi = hp.idx_n_head;
    float *h = b_.h.data(), *q_lat = b_.q_lat.data(), *Q = b_.Q.data(), *kv = b_.kv.data();

    {
        PhaseScope ps(clock_, Phase::hc_pre);
        be.hc_pre(b_.X.data(), n, HC, E, lw.hc_attn_fn, lv.hc_attn_scale.data(), lv.hc_attn_base.data(),
                  hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps, h, b_.split.data());
    }
    {
        // Projections of every token of the block (columns).
        PhaseScope ps(clock_, Phase::attn_proj);
        be.rms_norm(h, lv.attn_norm.data(), E, n, hp.rms_eps, h);
        be.matmul(lw.attn_q_a, 0, QR, h, E, (int)n, q_lat, QR);
        be.rms_norm(q_lat, lv.attn_q_a_norm.data(), QR, n, hp.rms_eps, q_lat);
        be.matmul(lw.attn_q_b, 0, H * D, q_lat, QR, (int)n, Q, H * D);
        be.rms_norm(Q, nullptr, D, n * H, hp.rms_eps, Q);  // every head, no weight
        be.matmul(lw.attn_kv, 0, D, h, E, (int)n, kv, D);
        be.rms_norm(kv, lv.attn_kv_a_norm.data(), D, n, hp.rms_eps, kv);
        if (r) {
            be.matmul(lw.comp_kv, 0, C, h, E, (int)n, b_.kappa.data(), C);
            be.matmul(lw.comp_gate, 0, C, h, E, (int)n, b_.gate.data(), C);
        }
        if (r == 4) {
            be.matmul(lw.idx_comp_kv, 0, 2 * di, h, E, (int)n, b_.ikappa.data(), 2 * di);
            be.matmul(lw.idx_comp_gate, 0, 2 * di, h, E, (int)n, b_.igate.data(), 2 * di);
        }
    }

    // State: the block's KV rows and compressor steps, tokens in order; token i's
    // view is the window up to its position and the rows counted after its step
    // (the compressors run before attention: a row completed at p is visible at p).
    CompRowSelection comp;
    {
        PhaseScope ps(clock_, Phase::attn_state);
        be.rope_tail(Q, n, H, D, pos_, rope, false);
        be.rope_tail(kv, n, 1, D, pos_, rope, false);
        if (opt_.fp8_kv) be.fp8_kv_round_trip(kv, n, D, hp.n_rot);
        be.kv_store(*state_, il, pos_, n, kv);
        if (r) {
            CompressorParams cp;
            cp.ape = &lw.comp_ape;
            cp.norm = lv.comp_norm.data();
            cp.rope = &rope;
            cp.row_dim = D;
            cp.n_rot = hp.n_rot;
            cp.rms_eps = hp.rms_eps;
            cp.fp8_kv = opt_.fp8_kv;
            cp.indexer_fp4 = opt_.indexer_fp4;
            be.compress(*state_, il, pos_, n, b_.kappa.data(), b_.gate.data(), C, cp, b_.comp_after.data());
            comp.count = b_.comp_after.data();  // ratio 128: every row so far
            if (r == 4) {
                cp.ape = &lw.idx_comp_ape;
                cp.norm = lv.idx_comp_norm.data();
                cp.row_dim = di;
                cp.indexer = true;
                be.compress(*state_, il, pos_, n, b_.ikappa.data(), b_.igate.data(), 2 * di, cp, b_.idx_after.data());
                // The indexer picks top_k rows once a token sees more than that.
                if (b_.idx_after[(size_t)(n - 1)] > hp.idx_top_k) {
                    float *iq = b_.iq.data(), *iw = b_.iw.data();
                    be.matmul(lw.idx_q_b, 0, Hi * di, q_lat, QR, (int)n, iq, Hi * di);
                    be.rope_tail(iq, n, Hi, di, pos_, rope, false);
                    be.indexer_transform(iq, n * Hi, di, opt_.indexer_fp4);
                    be.matmul(lw.idx_proj, 0, Hi, h, E, (int)n, iw, Hi);
                    const double s = 1.0 / std::sqrt((double)(di * Hi));
                    for (int64_t k = 0; k < n * Hi; ++k) iw[k] = (float)(iw[k] * s);
                    be.indexer_select(*state_, il, iq, iw, n, Hi, di, b_.idx_after.data(), hp.idx_top_k,
                                      b_.selected.data(), b_.n_selected.data());
                    comp = {b_.selected.data(), hp.idx_top_k, b_.n_selected.data()};
                }
            }
        }
    }
    {
        PhaseScope ps(clock_, Phase::attention);
        be.attention(*state_, il, pos_, n, Q, H, D, comp, lv.attn_sinks.data(), rope, b_.O.data());
    }
    {
        // Grouped output: z_g = W_oa[g] (heads of group g), y = W_ob z.
        PhaseScope ps(clock_, Phase::attn_out);
        const int64_t G = hp.o_groups, R = hp.o_lora_rank, group_in = H * D / G;
        for (int64_t g = 0; g < G; ++g) {
            be.matmul(lw.attn_output_a, g * R, R, b_.O.data() + g * group_in, H * D, (int)n, b_.z.data() + g * R,
                      G * R);
        }
        be.matmul(lw.attn_output_b, 0, E, b_.z.data(), G * R, (int)n, b_.y.data(), E);
    }
    PhaseScope ps(clock_, Phase::hc_post);
    be.hc_post(b_.y.data(), b_.X.data(), n, HC, E, b_.split.data(), b_.X2.data());
    std::swap(b_.X, b_.X2);
}

void Ds4Session::route(int64_t il, const int32_t* tokens, int64_t n) {
    const Ds4Hparams& hp = model_->hparams();
    const Ds4LayerWeights& lw = model_->weights().layers[(size_t)il];
    const Ds4LayerVectors& lv = model_->layer_vectors(il);
    const int64_t NX = hp.n_expert, K = hp.n_expert_used;
    double *s = b_.route_s.data(), *biased = b_.route_b.data();
    int32_t* order = b_.order.data();
    for (int64_t i = 0; i < n; ++i) {
        int32_t* ex = b_.experts.data() + i * K;
        for (int64_t e = 0; e < NX; ++e) s[e] = std::sqrt(softplus(b_.gl[(size_t)(i * NX + e)]));
        if (il < hp.n_hash_layers) {
            // Expert ids were range-checked when the model was loaded.
            std::memcpy(ex, lw.ffn_gate_tid2eid.row(tokens[i]), (size_t)K * 4);
        } else {
            // The bias only selects; the weights use the unbiased s. Ties keep the lower id first.
            for (int64_t e = 0; e < NX; ++e) biased[e] = s[e] + lv.exp_probs_b[(size_t)e];
            std::iota(order, order + NX, 0);
            std::partial_sort(order, order + K, order + NX, [&](int32_t a, int32_t b) {
                return biased[a] > biased[b] || (biased[a] == biased[b] && a < b);
            });
            std::copy(order, order + K, ex);
        }
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k) sum += s[ex[k]];
        const double norm = hp.expert_weights_norm ? 1.0 / std::max(sum, kMoeWeightSumFloor) : 1.0;
        for (int64_t k = 0; k < K; ++k) b_.ew[(size_t)(i * K + k)] = (float)(s[ex[k]] * norm * hp.expert_weights_scale);
    }
}

void Ds4Session::ffn_layer(int64_t il, const int32_t* tokens, int64_t n) {
    const Ds4Hparams& hp = model_->hparams();
    const Ds4LayerWeights& lw = model_->weights().layers[(size_t)il];
    const Ds4LayerVectors& lv = model_->layer_vectors(il);
    Backend& be = model_->backend();
    const int64_t E = hp.n_embd, HC = hp.n_hc, NX = hp.n_expert, K = hp.n_expert_used;
    float* h2 = b_.h.data();
    {
        PhaseScope ps(clock_, Phase::hc_pre);
        be.hc_pre(b_.X.data(), n, HC, E, lw.hc_ffn_fn, lv.hc_ffn_scale.data(), lv.hc_ffn_base.data(),
                  hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps, h2, b_.split.data());
    }
    {
        PhaseScope ps(clock_, Phase::router);
        be.rms_norm(h2, lv.ffn_norm.data(), E, n, hp.rms_eps, h2);
        be.matmul(lw.ffn_gate_inp, 0, NX, h2, E, (int)n, b_.gl.data(), NX);
        route(il, tokens, n);
    }
    {
        PhaseScope ps(clock_, Phase::moe);
        be.moe(lw, h2, n, b_.experts.data(), b_.ew.data(), K, hp.swiglu_clamp_exp[(size_t)il],
               hp.swiglu_clamp_shexp[(size_t)il], b_.y.data());
    }
    PhaseScope ps(clock_, Phase::hc_post);
    be.hc_post(b_.y.data(), b_.X.data(), n, HC, E, b_.split.data(), b_.X2.data());
    std::swap(b_.X, b_.X2);
}

}  // namespace ds4
