// One sequence's state (ds4-model.md section 4) and its entry points.
//
// All entry points run the same forward over a block of consecutive tokens:
// every matmul serves all tokens of the block as columns (per-column bits are
// independent of the block width), and the sequential parts (ring, compressor
// and indexer updates, attention) walk the tokens in order inside each layer.
// So verify rows are bitwise identical to decoding the tokens one by one.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/ds4_model.h"
#include "model/ds4_profile.h"

namespace ds4 {

struct Ds4SessionOptions {
    int64_t max_ctx = 4096;
    bool fp8_kv = true;       // D: FP8-E4M3 round trip of stored KV rows (false: llama.cpp)
    bool indexer_fp4 = true;  // D: FP4 round trip of indexer rows and queries (false: llama.cpp)
};

// Rolling compressor window (rows are tokens): r rows for r = 128; 8 for r = 4
// (0..3 previous window, 4..7 current). Scores start at -1e30 (D), so an empty
// slot gets weight 0.
struct CompressorState {
    int64_t rows = 0, width = 0;
    std::vector<float> kv, score;
};

struct LayerState {
    int64_t ratio = 0;
    std::vector<uint16_t> ring;       // F16 [n_swa][D], slot p mod n_swa
    std::vector<uint16_t> comp_rows;  // F16 [n_comp][D], row floor(p / r); at most max_ctx / r rows
    int64_t n_comp = 0;
    std::vector<uint16_t> idx_rows;   // F16 [n_idx][d_i] (r = 4)
    int64_t n_idx = 0;
    CompressorState comp, idx_comp;
};

class Ds4Session {
public:
    Ds4Session(std::shared_ptr<const Ds4Model> model, const Ds4SessionOptions& opt);

    int64_t pos() const { return pos_; }
    int64_t max_ctx() const { return opt_.max_ctx; }
    const Ds4SessionOptions& options() const { return opt_; }

    // Logits [n_vocab] of one token.
    std::vector<float> decode(int32_t token);
    // Logits of every token, row-major [tokens.size()][n_vocab].
    std::vector<float> verify(const std::vector<int32_t>& tokens);
    // Feeds the tokens; returns the logits of the last one. exact: one token at
    // a time; batched: blocks of up to kPrefillBlock tokens ending on ratio-4
    // boundaries (same results, as the forward is block-width invariant).
    std::vector<float> prefill(const std::vector<int32_t>& tokens, bool exact);

    static constexpr int64_t kPrefillBlock = 32;

    // Per-phase wall-clock seconds of every forward since the last reset (when enabled).
    PhaseClock& phase_clock() { return clock_; }

private:
    // Runs tokens [0, n) at positions pos_.. and advances pos_. Writes the logits
    // of tokens with want_logits[i] into logits (row-major, in token order).
    void forward(const int32_t* tokens, int64_t n, const std::vector<bool>& want_logits, std::vector<float>& logits);
    void check_tokens(const int32_t* tokens, int64_t n) const;

    void attention_layer(int64_t il, const int32_t* tokens, int64_t n, std::vector<float>& X);
    void ffn_layer(int64_t il, const int32_t* tokens, int64_t n, std::vector<float>& X);
    // One compressor step for the token at p; returns true and fills `row` when a row completes.
    bool compressor_step(int64_t il, CompressorState& st, const WeightView& ape, const std::vector<float>& norm,
                         int64_t Dc, const float* kappa, const float* gate, int64_t p, bool indexer, float* row);
    std::vector<int64_t> indexer_select(int64_t il, const float* h, const float* q_lat, int64_t p);

    std::shared_ptr<const Ds4Model> model_;
    Ds4SessionOptions opt_;
    std::vector<LayerState> layers_;
    int64_t pos_ = 0;
    PhaseClock clock_;
};

}  // namespace ds4
