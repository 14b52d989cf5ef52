// A loaded DeepSeek V4 Flash model: the GGUF mapping, its hparams, the tensor
// views, the small float vectors (norm weights, biases, sinks, HC scale/base)
// and the backend that computes with them. Sessions share it read-only.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf_file.h"
#include "model/ds4_hparams.h"
#include "model/ds4_weights.h"
#include "tokenizer/tokenizer.h"

namespace ds4 {

struct Ds4LayerVectors {
    std::vector<float> attn_norm, attn_q_a_norm, attn_kv_a_norm, attn_sinks;
    std::vector<float> hc_attn_scale, hc_attn_base, hc_ffn_scale, hc_ffn_base;
    std::vector<float> ffn_norm, exp_probs_b, comp_norm, idx_comp_norm;
};

class Ds4Model {
public:
    // Opens and validates `path` and makes the named backend (backend.h make_backend);
    // threads <= 0 uses every hardware thread.
    Ds4Model(const std::string& path, int threads, const std::string& backend = "cpu");

    const std::string& path() const { return file_.path(); }
    const GGUFFile& file() const { return file_; }
    const Ds4Hparams& hparams() const { return hp_; }
    const Ds4Weights& weights() const { return w_; }
    const Ds4LayerVectors& layer_vectors(int64_t il) const { return lv_[(size_t)il]; }
    const std::vector<float>& output_norm() const { return output_norm_; }
    const std::vector<float>& output_hc_base() const { return output_hc_base_; }
    float output_hc_scale() const { return output_hc_scale_; }
    Backend& backend() const { return *backend_; }
    // The tokenizer the file describes, built from its metadata at load; a file
    // without tokenizer metadata (some test models) loads, and this throws FormatError.
    const Tokenizer& tokenizer() const;
    // RoPE of layer il: plain for ratio 0, YaRN with the compressed base otherwise.
    const RopeSpec& rope(int64_t il) const { return rope_[(size_t)il]; }

private:
    GGUFFile file_;
    Ds4Hparams hp_;
    Ds4Weights w_;
    std::vector<Ds4LayerVectors> lv_;
    std::vector<float> output_norm_, output_hc_base_;
    float output_hc_scale_ = 1.0f;
    std::vector<RopeSpec> rope_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace ds4
