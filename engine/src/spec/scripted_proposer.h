// A drafter whose proposals are a known continuation with errors at chosen positions,
// so a test or probe knows the acceptance in advance: the candidate for position p is
// reference[p - start] unless p is an error position, where it is a different token
// (reference + 1 mod vocab). With the target-only output as the reference, greedy
// speculation accepts exactly the error-free runs.
#pragma once
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "spec/proposer.h"

namespace ds4 {

class ScriptedProposer final : public Proposer {
public:
    // reference[i] is the token at absolute position start + i; error_positions are
    // absolute positions; max_draft caps one proposal.
    ScriptedProposer(std::vector<int32_t> reference, int64_t start, std::vector<int64_t> error_positions,
                     int32_t n_vocab, int64_t max_draft);

    std::string name() const override { return "scripted"; }
    int64_t max_draft() const override { return max_draft_; }
    Draft propose(const DraftRequest& r) override;

private:
    std::vector<int32_t> ref_;
    int64_t start_;
    std::unordered_set<int64_t> errors_;
    int32_t vocab_;
    int64_t max_draft_;
};

}  // namespace ds4
