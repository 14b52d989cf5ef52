// How many tokens each speculative step verifies, chosen so that speculation is never
// slower than plain decoding.
//
// A step of width w drafts w - 1 candidates and verifies [pending, c1 .. c(w-1)] in one
// forward; it emits E(w) = 1 + a1 + a1 a2 + ... + a1 .. a(w-1) tokens on average, where
// aj is the chance that candidate j is accepted once j - 1 were. It costs
// T(w) = draft + verify(w) seconds (w = 1 is a plain decode: no draft). The policy keeps
// measured verify costs per width (a line through them for widths not yet measured),
// the draft cost and decayed acceptance counts by position, and picks the w with the
// most tokens per second, w = 1 (speculation off) when nothing beats plain decoding.
// Warmup is one plain step and one step of width 2 (the cheapest way to be wrong); a
// policy can be carried from one generation to the next (Ds4Speculator's `carry`), so
// the warmup is paid once per drafter and machine, not once per reply.
// While off it re-probes after 16, 32, .. 256 plain steps, so a drafter that starts to
// agree is noticed. A drafter's confidence head, where it has one, shortens a step
// whose candidates it doubts. Every decision is recorded with its reason.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds4 {

struct WidthDecision {
    int64_t pos = 0;         // target position of the pending token
    int64_t planned = 1;     // width chosen before drafting
    int64_t verified = 1;    // width verified (after the draft's length and confidence)
    int64_t accepted = 0;    // candidates accepted
    std::string reason;      // fixed, warmup, best, off, reprobe, limit (+ ", confidence", ", short draft")
    double predicted_speedup = 1.0;  // E(w) / T(w) over 1 / T(1) at the time of the choice
};

class WidthPolicy {
public:
    // fixed: 0 for the automatic policy, else the width of every step (1..max_width).
    // max_width: 1 + the drafter's longest proposal, at most 8.
    WidthPolicy(int64_t fixed, int64_t max_width);

    // The width for the next step, at most `limit` (tokens the step may emit).
    WidthDecision plan(int64_t pos, int64_t limit);
    // After drafting: the width to verify, given the draft's length and confidence.
    void trim(WidthDecision& d, int64_t drafted, const std::vector<float>& confidence) const;

    void record_draft(double seconds);
    void record_verify(int64_t width, double seconds);
    void record_accepted(int64_t candidates, int64_t accepted);

    bool automatic() const { return fixed_ == 0; }
    int64_t fixed() const { return fixed_; }
    int64_t max_width() const { return max_width_; }
    // Measured (or, where unmeasured, estimated) seconds of a verify of each width 1..max.
    std::vector<double> verify_costs() const;
    std::vector<bool> measured() const;
    double draft_cost() const { return draft_s_; }
    // The current acceptance estimate of candidate 1 .. max_width - 1.
    std::vector<double> acceptance() const;

private:
    double cost(int64_t w) const;
    int64_t cost_measured_above_1() const;
    double expected_tokens(int64_t w, const std::vector<double>& a) const;
    double speed(int64_t w, const std::vector<double>& a) const;  // tokens per second

    int64_t fixed_, max_width_;
    std::vector<double> verify_s_;        // EMA per width (index w), 0 where unmeasured
    std::vector<int64_t> verify_n_;       // timings recorded per width
    std::vector<double> tried_, accepted_;  // decayed counts per candidate index
    double draft_s_ = 0.0;
    bool draft_measured_ = false;
    int64_t draft_n_ = 0;
    int64_t steps_ = 0;
    int64_t off_steps_ = 0, next_probe_ = 16;
};

}  // namespace ds4
