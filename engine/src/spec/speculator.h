// The speculative loop over one target session (ds4-model.md section 6):
//
//   pending token p at position P (sampled, not yet fed)
//   draft   c1 .. c(w-1) for positions P+1 .. (the proposer)
//   verify  [p, c1 .. c(w-1)] in one forward that returns every row
//   accept  the longest prefix the acceptance rule takes, then draw the next token
//   rewind  the rejected candidates (cheap: the rings keep them until overwritten)
//
// Each step emits the accepted candidates and the next token, which becomes the new
// pending one. Verify rows are bitwise decode rows (ds4_session.h), so greedy output is
// token for token the target-only output and sampled output has its distribution
// (acceptance.h). Our forward is exact for any split, so a verify may cross the
// compressors' ratio-4 boundaries. The width of each step comes from WidthPolicy.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/ds4_session.h"
#include "sampling/sampler.h"
#include "spec/proposer.h"
#include "spec/spec_stats.h"
#include "spec/width_policy.h"

namespace ds4 {

struct SpecStep {
    std::vector<int32_t> tokens;  // emitted: the accepted candidates, then the next token
    std::vector<float> rows;      // [tokens.size()][vocab]: the logits each was drawn or accepted from
    WidthDecision decision;
};

class Ds4Speculator {
public:
    // width: 0 for the automatic policy, else 1..8 (capped at 1 + the proposer's longest
    // draft). The session must capture the layers the proposer reads (ArgumentError).
    // carry: a policy from an earlier generation with this proposer and width (its measured
    // costs and acceptance), or null to start afresh.
    Ds4Speculator(Ds4Session& target, std::shared_ptr<Proposer> proposer, const SamplingParams& params,
                  int64_t width, const WidthPolicy* carry = nullptr);

    // After the prompt: `logits` are its last row, `history` every token fed (penalties
    // see it). Draws the first token and returns it; it is pending.
    int32_t begin(const float* logits, std::vector<int32_t> history);
    // One step emitting 1 .. limit tokens (limit >= 1; also bounded by the context).
    SpecStep step(int64_t limit, bool want_rows);
    // Keep only the first `keep` tokens of the last step (a stop token among them): the
    // target forgets the rest, as if plain decoding had stopped there.
    void keep_first(int64_t keep);
    // Replace the pending token (a forced token, e.g. the end of a thinking budget).
    void replace_pending(int32_t token);

    int32_t pending() const { return pending_; }
    const SpecStats& stats() const { return stats_; }
    const std::vector<WidthDecision>& decisions() const { return decisions_; }
    const WidthPolicy& policy() const { return policy_; }
    const Proposer& proposer() const { return *proposer_; }

private:
    void keep_features(const float* rows, int64_t n);

    Ds4Session& s_;
    std::shared_ptr<Proposer> proposer_;
    Sampler sampler_;
    WidthPolicy policy_;
    int64_t vocab_, feat_width_, window_;
    std::vector<int32_t> history_;
    int32_t pending_ = -1;
    std::vector<float> features_;  // the last `window_` captured rows, oldest first
    SpecStats stats_;
    std::vector<WidthDecision> decisions_;
    int64_t last_emitted_ = 0;     // tokens the last step emitted (keep_first's bound)
};

}  // namespace ds4
