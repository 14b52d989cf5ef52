// Views of every tensor of ds4-model.md section 2, pointing into the GGUF
// mapping (quantised weights are used in place, never expanded), and the table
// of all of them that the backend maps (Backend::bind_weights). Shapes are
// checked against the hparams at load time, so the forward pass can trust them.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/weight_view.h"
#include "model/ds4_hparams.h"

namespace ds4 {

class GGUFFile;

struct Ds4LayerWeights {
    int64_t ratio = 0;
    WeightView attn_norm, attn_q_a, attn_q_a_norm, attn_q_b, attn_kv, attn_kv_a_norm, attn_sinks;
    WeightView attn_output_a, attn_output_b;
    WeightView hc_attn_fn, hc_attn_scale, hc_attn_base, hc_ffn_fn, hc_ffn_scale, hc_ffn_base;
    WeightView ffn_norm, ffn_gate_inp, exp_probs_b, ffn_gate_tid2eid;
    MoeWeights ffn;  // routed and shared experts
    // ratio > 0
    WeightView comp_kv, comp_gate, comp_ape, comp_norm;
    // ratio 4: indexer
    WeightView idx_q_b, idx_proj, idx_comp_kv, idx_comp_gate, idx_comp_ape, idx_comp_norm;
};

struct Ds4Weights {
    WeightView token_embd, output, output_norm, output_hc_fn, output_hc_base, output_hc_scale;
    std::vector<Ds4LayerWeights> layers;
    WeightTable table;  // every view above, by id (vectors marked: small, kept as floats by backends)
};

// Builds the views; a missing tensor, a wrong shape or a type without kernels
// throws ds4::FormatError / UnsupportedError naming the tensor, the expected and
// the actual shape. `f` must outlive the views (they point into its mapping).
Ds4Weights load_ds4_weights(const GGUFFile& f, const Ds4Hparams& hp);

// A DSpark drafter's weights (ds4-model.md section 6): its blocks, output_norm and
// output_hc_*, in a table that starts as a copy of the target's (`target`, so ids go
// on from there and one bind_weights covers both); token_embd and output are the
// target's views (the drafter file has neither).
Ds4Weights load_ds4_drafter_blocks(const GGUFFile& f, const Ds4Hparams& hp, const Ds4Weights& target);

// The same Loader, for the drafter's own extra tensors: get (matrix) or vec (small
// vector kept as floats by backends); each appends to `table` under a new id.
WeightView load_weight_view(const GGUFFile& f, WeightTable& table, const std::string& name,
                            std::initializer_list<int64_t> shape, bool vector);


}  // namespace ds4
