// What a speculative run counts, each with its denominator.
#pragma once
#include <cstdint>
#include <vector>

namespace ds4 {

struct SpecStats {
    int64_t steps = 0;            // target forwards (one verify per step; width 1 is a plain decode)
    int64_t plain_steps = 0;      // steps of width 1
    int64_t drafts = 0;           // drafter calls
    int64_t proposed = 0;         // candidates the drafter returned
    int64_t verified = 0;         // candidates verified (drafted and sent to the target)
    int64_t accepted = 0;         // candidates accepted
    int64_t emitted = 0;          // tokens emitted: the first (begin), then per step the accepted + one drawn
    int64_t discarded = 0;        // emitted tokens taken back after a stop (not counted in emitted)
    std::vector<int64_t> tried_at, accepted_at;   // per candidate index: verified, accepted
    std::vector<int64_t> accept_length;           // per spec step: how many accepted (histogram by count)
    double draft_s = 0, verify_s = 0, rewind_s = 0, sample_s = 0;
};

}  // namespace ds4
