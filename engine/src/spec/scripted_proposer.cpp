#include "spec/scripted_proposer.h"

#include <string>

#include "common/error.h"

namespace ds4 {

ScriptedProposer::ScriptedProposer(std::vector<int32_t> reference, int64_t start,
                                   std::vector<int64_t> error_positions, int32_t n_vocab, int64_t max_draft)
    : ref_(std::move(reference)), start_(start), errors_(error_positions.begin(), error_positions.end()),
      vocab_(n_vocab), max_draft_(max_draft) {
    if (start < 0) throw ArgumentError("scripted drafter: start position must be >= 0");
    if (n_vocab < 2) throw ArgumentError("scripted drafter: the vocabulary needs at least 2 tokens");
    if (max_draft < 1) throw ArgumentError("scripted drafter: max_draft must be >= 1");
    for (size_t i = 0; i < ref_.size(); ++i) {
        if (ref_[i] < 0 || ref_[i] >= n_vocab) {
            throw ArgumentError("scripted drafter: reference token " + std::to_string(ref_[i]) + " at index " +
                                std::to_string(i) + " is outside the vocabulary 0.." + std::to_string(n_vocab - 1));
        }
    }
}

Draft ScriptedProposer::propose(const DraftRequest& r) {
    Draft out;
    const int64_t n = std::min(r.max_tokens, max_draft_);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t p = r.pos + 1 + i, k = p - start_;
        if (k < 0 || k >= (int64_t)ref_.size()) break;  // nothing known past the reference
        const int32_t t = ref_[(size_t)k];
        out.tokens.push_back(errors_.count(p) ? (int32_t)((t + 1) % vocab_) : t);
    }
    return out;
}

}  // namespace ds4
