// The acceptance rule of lossless speculative decoding for a deterministic drafter.
//
// The target verified [pending, c1 .. cd] in one forward: row j holds its logits after
// c1 .. cj. Each candidate is tested in order against the filtered distribution p_j that
// plain sampling would draw from at that point (the same Sampler, penalties included):
// greedy accepts cj iff it is p_j's argmax; otherwise cj is accepted with probability
// p_j(cj). The first rejection draws the next token from the residual (p_j without cj,
// renormalised), so every emitted token is distributed exactly as plain sampling's; when
// all d are accepted the next token is drawn from row d. Greedy output is therefore
// bitwise identical to target-only decoding, and sampled output has its distribution.
#pragma once
#include <cstdint>
#include <vector>

#include "sampling/sampler.h"

namespace ds4 {

struct Acceptance {
    int64_t accepted = 0;  // leading candidates accepted (0 .. draft.size())
    int32_t next = 0;      // the token after them, drawn from row `accepted`
};

// rows: [draft.size() + 1][vocab]. history: the tokens before c1 (prompt, emitted, pending);
// it is restored before returning.
Acceptance accept_draft(Sampler& sampler, const float* rows, int64_t vocab, const std::vector<int32_t>& draft,
                        std::vector<int32_t>& history);

// accept_draft for a plain-greedy sampler (SamplingParams::plain_greedy) from each row's
// argmax alone: argmax[j] is row j's (ties: lower id). The same result, without the rows.
Acceptance accept_draft_greedy(const int32_t* argmax, const std::vector<int32_t>& draft);

}  // namespace ds4
