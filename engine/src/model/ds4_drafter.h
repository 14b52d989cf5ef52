// The DSpark drafter (`deepseek4-dflash-draft`, ds4-model.md section 6): three DS4
// blocks with bidirectional attention over [context rows ++ block rows], fed the
// target's captured features, proposing block_size candidate tokens with the Markov
// head's logits and the confidence head's scores. Its token embedding and LM head
// are the target's; its weights join the target's table on the target's backend.
//
// The forward follows Lucebox (server/src/deepseek4/deepseek4_graph.cpp,
// deepseek4_dspark_draft_forward) where ds4-model.md is terse; the decisions are
// written next to the code that takes them (ds4_drafter.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/ds4_block.h"
#include "model/ds4_hparams.h"
#include "model/ds4_model.h"
#include "model/ds4_profile.h"
#include "model/ds4_weights.h"

namespace ds4 {

// The drafter keys (`deepseek4-dflash-draft.dflash.*`).
struct Ds4DrafterConfig {
    int64_t n_target_layers = 0;         // dflash.n_target_layers (= capture layers)
    int64_t block_size = 0;              // dflash.block_size: [seed, MASK x (block_size - 1)]
    int32_t mask_token_id = 0;           // dflash.mask_token_id
    bool head_hc = false;                // dflash.head_hc_enabled (recorded; the HC head always runs)
    std::vector<int64_t> capture_layers; // dflash.capture_layer_ids: target layers whose features feed it
    int64_t markov_rank = 0;             // dflash.dspark.markov_rank
    int64_t confidence_dim = 0;          // dflash.dspark.confidence_dim: n_embd or n_embd + markov_rank; 0: no head
};

// What one propose() returns: candidate i (i < m, m = the candidates asked for, at most
// block_size) is the drafter's guess for the token at position pos + 1 + i.
struct Ds4Proposal {
    std::vector<int32_t> tokens;    // [m] greedy chain through the Markov head
    std::vector<float> logits;      // [m][n_vocab]: lm_head(h_i) + W2 . W1[prev_i] (when asked for)
    std::vector<float> confidence;  // [m] sigmoid(conf . [h_pre_i; W1[prev_i]] + b); empty without the head
};

class Ds4Drafter {
public:
    // Opens the drafter file and checks that it fits the target (n_embd, vocab, capture
    // layers); FormatError names the key or tensor that is missing, malformed or does not fit.
    Ds4Drafter(const std::string& path, std::shared_ptr<const Ds4Model> target);
    Ds4Drafter(const Ds4Drafter&) = delete;  // the block runner holds references into it
    Ds4Drafter& operator=(const Ds4Drafter&) = delete;

    const Ds4Hparams& hparams() const { return hp_; }
    const Ds4DrafterConfig& config() const { return cfg_; }
    const Ds4Model& target() const { return *target_; }
    // Most context rows one forward attends to (the drafter's sliding window).
    int64_t max_context() const { return hp_.n_swa; }

    // One drafter forward. features: row-major [n_ctx][n_target_layers * n_embd], the
    // captured features of positions pos - n_ctx .. pos - 1 (oldest first; only the last
    // max_context() rows are used); seed: the token at position pos (the last accepted one).
    // want_logits: fill Ds4Proposal::logits (the chain itself never brings them to the host).
    // candidates: how many of the chain's block_size candidates to form (the chain stops there:
    // a speculative step that verifies w tokens needs w - 1); <= 0 or more: all of them.
    Ds4Proposal propose(const float* features, int64_t n_ctx, int32_t seed, int64_t pos, bool want_logits = true,
                        int64_t candidates = 0);

private:
    std::shared_ptr<const Ds4Model> target_;
    GGUFFile file_;
    Ds4Hparams hp_;
    Ds4DrafterConfig cfg_;
    Ds4Weights w_;  // blocks + HC head; token_embd / output are the target's views
    WeightView fc_, hidden_norm_, markov_w1_, markov_w2_, conf_w_;
    uint64_t serial_ = 0;  // this drafter's extension of the target's table (Ds4Model::bind_extension)
    float conf_b_ = 0.0f;  // the confidence bias (one value, read once)
    RopeSpec rope_;        // ratio-0 RoPE: base rope.freq_base, no YaRN
    PhaseClock clock_;
    Ds4Activations act_;
    Ds4BlockRunner runner_;
    std::vector<std::unique_ptr<DeviceBuffer>> bufs_;
    Dev<float> feat_, main_x_, K_, pre_, logits_, w1row_, bias_, conf_in_, conf_, chain_vals_;
    Dev<int32_t> chain_ids_;  // [1 + block_size]: the seed, then each candidate (row_top_k writes them)
};

}  // namespace ds4
