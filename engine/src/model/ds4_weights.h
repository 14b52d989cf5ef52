// Views of every tensor of ds4-model.md section 2, pointing into the GGUF
// mapping (quantised weights are used in place, never expanded). Shapes are
// checked against the hparams at load time, so the forward pass can trust them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/ds4_hparams.h"

namespace ds4 {

class GGUFFile;

// One tensor: ggml type id, data in the mapping, ne[] (ggml order, innermost first).
// A matrix with ne = [in, out, (experts)] has n_rows() = out rows of ne[0] values.
struct WeightView {
    std::string name;
    uint32_t type = 0;
    const uint8_t* data = nullptr;
    int64_t ne[4] = {1, 1, 1, 1};
    uint64_t row_bytes = 0;  // bytes of one row of ne[0] values

    bool present() const { return data != nullptr; }
    int64_t n_in() const { return ne[0]; }
    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    const uint8_t* row(int64_t r) const { return data + (uint64_t)r * row_bytes; }
};

struct Ds4LayerWeights {
    int64_t ratio = 0;
    WeightView attn_norm, attn_q_a, attn_q_a_norm, attn_q_b, attn_kv, attn_kv_a_norm, attn_sinks;
    WeightView attn_output_a, attn_output_b;
    WeightView hc_attn_fn, hc_attn_scale, hc_attn_base, hc_ffn_fn, hc_ffn_scale, hc_ffn_base;
    WeightView ffn_norm, ffn_gate_inp, exp_probs_b, ffn_gate_tid2eid;
    WeightView ffn_gate_exps, ffn_up_exps, ffn_down_exps, ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp;
    // ratio > 0
    WeightView comp_kv, comp_gate, comp_ape, comp_norm;
    // ratio 4: indexer
    WeightView idx_q_b, idx_proj, idx_comp_kv, idx_comp_gate, idx_comp_ape, idx_comp_norm;
};

struct Ds4Weights {
    WeightView token_embd, output, output_norm, output_hc_fn, output_hc_base, output_hc_scale;
    std::vector<Ds4LayerWeights> layers;
};

// Builds the views; a missing tensor, a wrong shape or a type without kernels
// throws ds4::FormatError / UnsupportedError naming the tensor, the expected and
// the actual shape. `f` must outlive the views (they point into its mapping).
Ds4Weights load_ds4_weights(const GGUFFile& f, const Ds4Hparams& hp);

// Small vectors (norm weights, biases, sinks, HC scale/base) as floats.
std::vector<float> weight_to_floats(const WeightView& w);

}  // namespace ds4
