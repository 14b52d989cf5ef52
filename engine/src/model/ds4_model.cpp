#include "model/ds4_model.h"

#include "common/error.h"
#include "tokenizer/tokenizer_gguf.h"

namespace ds4 {

Ds4Model::Ds4Model(const std::string& path, int threads, const std::string& backend)
    : file_(path),
      hp_(read_ds4_hparams(file_)),
      w_(load_ds4_weights(file_, hp_)),
      tokenizer_(file_.has("tokenizer.ggml.tokens") ? tokenizer_from_gguf(file_) : nullptr) {
    for (const Ds4LayerWeights& l : w_.layers) {
        Ds4LayerVectors v;
        v.attn_norm = weight_to_floats(l.attn_norm);
        v.attn_q_a_norm = weight_to_floats(l.attn_q_a_norm);
        v.attn_kv_a_norm = weight_to_floats(l.attn_kv_a_norm);
        v.attn_sinks = weight_to_floats(l.attn_sinks);
        v.hc_attn_scale = weight_to_floats(l.hc_attn_scale);
        v.hc_attn_base = weight_to_floats(l.hc_attn_base);
        v.hc_ffn_scale = weight_to_floats(l.hc_ffn_scale);
        v.hc_ffn_base = weight_to_floats(l.hc_ffn_base);
        v.ffn_norm = weight_to_floats(l.ffn_norm);
        if (l.exp_probs_b.present()) v.exp_probs_b = weight_to_floats(l.exp_probs_b);
        if (l.comp_norm.present()) v.comp_norm = weight_to_floats(l.comp_norm);
        if (l.idx_comp_norm.present()) v.idx_comp_norm = weight_to_floats(l.idx_comp_norm);
        lv_.push_back(std::move(v));
    }
    output_norm_ = weight_to_floats(w_.output_norm);
    output_hc_base_ = weight_to_floats(w_.output_hc_base);
    output_hc_scale_ = weight_to_floats(w_.output_hc_scale)[0];

    RopeSpec plain;
    plain.n_rot = hp_.n_rot;
    plain.freq_base = hp_.rope_freq_base;
    RopeSpec compressed = plain;
    compressed.freq_base = hp_.compress_rope_freq_base;
    if (hp_.yarn_factor > 1.0) {
        compressed.freq_scale = 1.0 / hp_.yarn_factor;
        compressed.ext_factor = 1.0;
        compressed.n_ctx_orig = hp_.yarn_orig_ctx;
        compressed.beta_fast = hp_.yarn_beta_fast;
        compressed.beta_slow = hp_.yarn_beta_slow;
    }
    for (int64_t r : hp_.compress_ratios) rope_.push_back(r ? compressed : plain);
    backend_ = make_backend(backend, threads);
    backend_->bind_weights(w_);
}

const Tokenizer& Ds4Model::tokenizer() const {
    if (!tokenizer_) throw FormatError(path() + ": GGUF metadata lacks 'tokenizer.ggml.tokens'; the model has no tokenizer");
    return *tokenizer_;
}

}  // namespace ds4
