// The DSpark drafter as a Proposer: one drafter forward per proposal, its greedy
// Markov chain as the candidates and its confidence head (when the file has one) as
// the per-candidate estimate.
#pragma once
#include <memory>

#include "model/ds4_drafter.h"
#include "spec/proposer.h"

namespace ds4 {

class DsparkProposer final : public Proposer {
public:
    explicit DsparkProposer(std::shared_ptr<Ds4Drafter> drafter) : d_(std::move(drafter)) {}

    std::string name() const override { return "dspark"; }
    int64_t max_draft() const override { return d_->config().block_size; }
    std::vector<int64_t> capture_layers() const override { return d_->config().capture_layers; }
    // Lucebox captures each layer's output (the features are the HC mean after the layer).
    bool capture_input() const override { return false; }
    int64_t max_context() const override { return d_->max_context(); }
    Draft propose(const DraftRequest& r) override;

private:
    std::shared_ptr<Ds4Drafter> d_;
};

}  // namespace ds4
