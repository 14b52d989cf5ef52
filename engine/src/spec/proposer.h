// What a speculative loop asks of a drafter: up to n candidate tokens for the positions
// after the pending one. Two kinds implement it: the DSpark drafter (dspark_proposer.h),
// which reads the target's captured features, and the scripted drafter
// (scripted_proposer.h), whose candidates come from a known continuation with errors
// placed where a test wants them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds4 {

struct DraftRequest {
    // Captured target features of positions pos - n_ctx .. pos - 1, row-major
    // [n_ctx][feature_width()] (n_ctx may be 0 for a proposer that needs none).
    const float* features = nullptr;
    int64_t n_ctx = 0;
    int32_t pending = 0;  // the token at position pos: sampled, not yet fed to the target
    int64_t pos = 0;
    int64_t max_tokens = 0;  // candidates wanted, for positions pos + 1 .. pos + max_tokens
};

struct Draft {
    std::vector<int32_t> tokens;     // at most max_tokens; fewer when the proposer has no more
    std::vector<float> confidence;   // per token, in [0, 1]; empty when the proposer has no estimate
};

class Proposer {
public:
    virtual ~Proposer() = default;
    virtual std::string name() const = 0;
    // Most candidates one proposal can hold.
    virtual int64_t max_draft() const = 0;
    // The target layers whose features it reads, and where (layer input or output);
    // empty: it reads none.
    virtual std::vector<int64_t> capture_layers() const { return {}; }
    virtual bool capture_input() const { return false; }
    // Most feature rows one proposal reads (its context window).
    virtual int64_t max_context() const { return 0; }
    virtual Draft propose(const DraftRequest& request) = 0;
};

}  // namespace ds4
