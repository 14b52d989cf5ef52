#include "spec/dspark_proposer.h"

#include <algorithm>

namespace ds4 {

Draft DsparkProposer::propose(const DraftRequest& r) {
    // Only the candidates the step verifies: the Markov chain stops there.
    Ds4Proposal p = d_->propose(r.features, r.n_ctx, r.pending, r.pos, /*want_logits=*/false,
                                std::max<int64_t>(r.max_tokens, 1));
    const size_t n = std::min(p.tokens.size(), (size_t)std::max<int64_t>(r.max_tokens, 0));
    Draft out;
    out.tokens.assign(p.tokens.begin(), p.tokens.begin() + (ptrdiff_t)n);
    if (!p.confidence.empty()) out.confidence.assign(p.confidence.begin(), p.confidence.begin() + (ptrdiff_t)n);
    return out;
}

}  // namespace ds4
