// The layer math of DeepSeek V4 (ds4-model.md section 3) as functions over
// (layer weights, sequence state, activation buffers), enqueued on a backend.
// The target's session calls them block by block; the DSpark drafter (three
// DS4 blocks with bidirectional attention and no compressor, section 6) reuses
// the projections, the output projection, the FFN and the head, and brings its
// own attention step.
//
// Nothing here reads backend memory: what the host decides (whether a layer's
// indexer selects, how many rows a token sees) follows from positions.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/ds4_hparams.h"
#include "model/ds4_profile.h"
#include "model/ds4_weights.h"

namespace ds4 {

// Activation buffers for blocks of up to max_tokens tokens, in backend memory,
// allocated once (no allocation per token).
struct Ds4Activations {
    Ds4Activations(Backend& be, const Ds4Hparams& hp, int64_t max_tokens);

    int64_t max_tokens = 0;
    Dev<float> X, X2;                 // [tokens][n_hc][E] hyper-connection streams (X2: the next X)
    Dev<float> h, q_lat, Q, kv;       // sublayer input, q LoRA latent, query heads, KV row
    Dev<float> kappa, gate, ikappa, igate, iq, iw;  // compressor inputs, indexer queries and weights
    Dev<float> O, z, y, gl, ew, e;    // attention output, output LoRA, sublayer output, gate logits,
                                      // expert weights, head collapse
    Dev<double> split;                // HC split per token
    Dev<int32_t> tokens, experts, selected;

private:
    std::vector<std::unique_ptr<DeviceBuffer>> owned_;
};

// Tokens of the next piece of a run of `left` tokens starting at position p, at most `cap`:
// a piece other than the last ends on a ratio-4 compressor boundary (where D and L split
// batches; the forward is exact for any split, the rule keeps the split points where a fused
// GPU compressor will need them), unless that would leave it empty. Prefill blocks and the
// attention steps inside a block are cut by it.
inline int64_t ratio4_piece(int64_t p, int64_t left, int64_t cap) {
    const int64_t len = left < cap ? left : cap, over = (p + len) % 4;
    return len < left && len > over ? len - over : len;
}

// How layer il routes its tokens (ds4-model.md: hash layers by token id, the rest by biased
// top-k), from the hyperparameters and the layer's weights.
RouteParams layer_route_params(const Ds4Hparams& hp, const Ds4LayerWeights& lw, int64_t il);

struct Ds4Numerics {
    bool fp8_kv = true;       // D: FP8-E4M3 round trip of stored KV rows (false: llama.cpp)
    bool indexer_fp4 = true;  // D: FP4 round trip of indexer rows and queries (false: llama.cpp)
};

class Ds4BlockRunner {
public:
    Ds4BlockRunner(Backend& be, const Ds4Hparams& hp, PhaseClock& clock) : be_(be), hp_(hp), clock_(clock) {}

    // X = token_embd[a.tokens[i]] in all n_hc streams (tokens already uploaded).
    void embed(const Ds4Weights& w, Ds4Activations& a, int64_t n);

    // Attention half, in three steps a drafter can recombine:
    // HC-pre, norms and projections of the n tokens (h, q_lat, Q, kv, compressor inputs); Q and
    // kv before their own norms, which attn_causal applies with RoPE (Backend::attention_inputs).
    void attn_project(const Ds4LayerWeights& lw, Ds4Activations& a, int64_t n);
    // The norms of Q's heads and of kv alone, for a caller that rotates and stores them itself.
    void attn_norms(const Ds4LayerWeights& lw, Ds4Activations& a, int64_t n);
    // The target's causal step at positions p0..: Q and KV norms, RoPE, KV rounding, ring and compressors,
    // indexer selection, attention over the sequence state -> a.O.
    // More tokens than the state's max_block run as consecutive steps of at most that many
    // (each stores its rows, then attends), exactly as separate blocks would: the projections
    // and the FFN around it still take all n tokens as columns.
    void attn_causal(const Ds4LayerWeights& lw, int64_t il, const RopeSpec& rope, SeqState& st, const Ds4Numerics& nx,
                     Ds4Activations& a, int64_t p0, int64_t n);
    // Grouped output projection and HC-post (X <- X').
    void attn_output(const Ds4LayerWeights& lw, Ds4Activations& a, int64_t n);

    // FFN half: HC-pre, router, routed and shared experts, HC-post (X <- X').
    void ffn(const Ds4LayerWeights& lw, int64_t il, Ds4Activations& a, int64_t n);

    // Mean of the n_hc streams of the n tokens into out (ldo floats apart): layer capture.
    void capture(const Ds4Activations& a, int64_t n, Dev<float> out, int64_t ldo);

    // Output head of m tokens whose streams are X ([m][n_hc][E]): logits [m][n_vocab].
    void head(const Ds4Weights& w, Dev<const float> X, Ds4Activations& a, int64_t m, Dev<float> logits);

private:
    // One step of attn_causal: tokens t0 .. t0 + n of the block (n <= max_block) at positions p0 ..
    void attn_causal_step(const Ds4LayerWeights& lw, int64_t il, const RopeSpec& rope, SeqState& st,
                          const Ds4Numerics& nx, Ds4Activations& a, int64_t t0, int64_t p0, int64_t n);

    Backend& be_;
    const Ds4Hparams& hp_;
    PhaseClock& clock_;
};

}  // namespace ds4
