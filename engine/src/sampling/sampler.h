// Token sampling over one row of logits: penalties, then greedy or
// temperature / top-k / top-p / min-p, then a seeded draw. Pure function of
// (logits, history, params, rng state): no global state, so a run is
// reproducible from its seed.
#pragma once
#include <cstdint>
#include <vector>

#include "sampling/rng.h"

namespace ds4 {

struct SamplingParams {
    float temperature = 0.0f;         // <= 0: greedy (argmax, lowest id wins a tie)
    int32_t top_k = 0;                // 0: off
    float top_p = 1.0f;               // 1: off
    float min_p = 0.0f;               // 0: off
    float repetition_penalty = 1.0f;  // 1: off (CTRL-style: divide positive, multiply negative logits)
    float presence_penalty = 0.0f;    // 0: off (subtract once for every token already present)
    float frequency_penalty = 0.0f;   // 0: off (subtract per occurrence)
    int32_t penalty_last_n = -1;      // how much history the penalties see; -1: all of it
    uint64_t seed = 0;

    // Throws ds4::ArgumentError naming the bad field.
    void validate() const;
    bool greedy() const { return temperature <= 0.0f; }
    // Greedy over the raw logits (no penalty moves them): the token is the row's argmax, which
    // a backend can find where the logits are (Ds4Session::decode_top).
    bool plain_greedy() const {
        return greedy() && repetition_penalty == 1.0f && presence_penalty == 0.0f && frequency_penalty == 0.0f;
    }
};

// Candidates that survive the filters, with their probabilities (sum to 1), in
// descending probability order (ties by ascending id). Exposed for tests and logprobs.
struct Candidates {
    std::vector<int32_t> ids;
    std::vector<double> probs;
};

class Sampler {
public:
    Sampler(const SamplingParams& params, int32_t vocab_size);

    // Logits after penalties, in float64 (what the filters see).
    std::vector<double> penalised(const float* logits, const std::vector<int32_t>& history) const;
    // The filtered distribution the next draw is taken from (greedy: one candidate, prob 1).
    Candidates distribution(const float* logits, const std::vector<int32_t>& history) const;
    // Draw the next token; advances the RNG only when not greedy.
    int32_t sample(const float* logits, const std::vector<int32_t>& history);
    // One draw from a distribution (what sample() does after distribution()); advances the
    // RNG once unless the sampler is greedy (then the first candidate).
    int32_t draw(const Candidates& c);
    // A uniform number in [0, 1) from the same stream (a speculative accept test).
    double uniform() { return rng_.next_unit(); }

    const SamplingParams& params() const { return params_; }

private:
    SamplingParams params_;
    int32_t vocab_;
    Rng rng_;
};

}  // namespace ds4
