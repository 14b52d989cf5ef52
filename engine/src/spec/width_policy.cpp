#include "spec/width_policy.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace ds4 {

namespace {
constexpr double kEma = 0.3;          // weight of a new timing
constexpr double kDecay = 0.99;       // per observation: about the last 100 count (recent ones more)
constexpr double kPrior = 1.0;        // pseudo-observations behind each position's prior
constexpr double kPriorFirst = 0.5;   // the first position's prior: weak and pessimistic
constexpr double kMargin = 1.05;      // a width must beat plain decoding by 5% (timings are noisy) to be chosen
constexpr int64_t kMaxProbeGap = 256;
}  // namespace

WidthPolicy::WidthPolicy(int64_t fixed, int64_t max_width)
    : fixed_(fixed), max_width_(max_width), verify_s_((size_t)max_width + 1, 0.0), verify_n_((size_t)max_width + 1, 0),
      tried_((size_t)max_width, 0.0), accepted_((size_t)max_width, 0.0) {
    if (max_width < 1 || max_width > 8) throw ArgumentError("speculation: max width must be 1..8");
    if (fixed < 0 || fixed > 8) throw ArgumentError("speculation: width must be 1..8 (or auto), got " + std::to_string(fixed));
}

std::vector<double> WidthPolicy::acceptance() const {
    std::vector<double> a((size_t)max_width_ - 1);
    // A later position's prior is the estimate of the one before it (acceptance changes slowly
    // along a draft), so a drafter that is right at position j is tried at j + 1.
    double prior = kPriorFirst;
    for (size_t j = 0; j < a.size(); ++j) {
        a[j] = (accepted_[j] + kPrior * prior) / (tried_[j] + kPrior);
        prior = a[j];
    }
    return a;
}

double WidthPolicy::cost(int64_t w) const {
    if (verify_s_[(size_t)w] > 0) return verify_s_[(size_t)w];
    // Unmeasured: the line through the smallest and largest measured widths (verify is
    // one pass over the weights plus work per column), or the one measured width.
    int64_t lo = 0, hi = 0;
    for (int64_t k = 1; k <= max_width_; ++k) {
        if (verify_s_[(size_t)k] > 0) {
            if (!lo) lo = k;
            hi = k;
        }
    }
    if (!lo) return 0.0;
    if (lo == hi) return verify_s_[(size_t)lo];
    const double slope = (verify_s_[(size_t)hi] - verify_s_[(size_t)lo]) / (double)(hi - lo);
    return std::max(verify_s_[(size_t)lo] + slope * (double)(w - lo), 1e-12);
}

int64_t WidthPolicy::cost_measured_above_1() const {
    int64_t n = 0;
    for (int64_t w = 2; w <= max_width_; ++w) n += verify_s_[(size_t)w] > 0;
    return n;
}

std::vector<double> WidthPolicy::verify_costs() const {
    std::vector<double> c;
    for (int64_t w = 1; w <= max_width_; ++w) c.push_back(cost(w));
    return c;
}

std::vector<bool> WidthPolicy::measured() const {
    std::vector<bool> m;
    for (int64_t w = 1; w <= max_width_; ++w) m.push_back(verify_s_[(size_t)w] > 0);
    return m;
}

double WidthPolicy::expected_tokens(int64_t w, const std::vector<double>& a) const {
    double e = 1.0, run = 1.0;
    for (int64_t j = 0; j + 1 < w; ++j) {
        run *= a[(size_t)j];
        e += run;
    }
    return e;
}

double WidthPolicy::speed(int64_t w, const std::vector<double>& a) const {
    const double t = cost(w) + (w > 1 ? draft_s_ : 0.0);
    return t > 0 ? expected_tokens(w, a) / t : 0.0;
}

WidthDecision WidthPolicy::plan(int64_t pos, int64_t limit) {
    WidthDecision d;
    d.pos = pos;
    const int64_t cap = std::max<int64_t>(1, std::min(limit, max_width_));
    ++steps_;
    if (fixed_) {
        d.planned = std::min(fixed_, cap);
        d.reason = d.planned < fixed_ ? "fixed, limit" : "fixed";
    } else if (verify_s_[1] <= 0) {
        d.planned = 1;  // warmup 1: the plain decode cost
        d.reason = "warmup";
    } else if (!draft_measured_ || cost_measured_above_1() == 0) {
        // warmup 2: the draft cost and the cheapest speculative step (width 2); wider widths
        // are estimated on the line through widths 1 and 2 until the policy tries them.
        d.planned = std::min<int64_t>(2, cap);
        d.reason = "warmup";
    } else {
        const std::vector<double> a = acceptance();
        const double plain = speed(1, a);
        int64_t best = 1;
        for (int64_t w = 2; w <= cap; ++w) {
            if (speed(w, a) > speed(best, a)) best = w;
        }
        if (best > 1 && speed(best, a) > kMargin * plain) {
            d.planned = best;
            d.reason = "best";
            off_steps_ = 0;
            next_probe_ = 16;
        } else if (++off_steps_ >= next_probe_ && cap > 1) {
            // Re-probe at the widest width the limit allows (one step, then back to deciding).
            d.planned = best > 1 ? best : std::min<int64_t>(2, cap);
            d.reason = "reprobe";
            off_steps_ = 0;
            next_probe_ = std::min(next_probe_ * 2, kMaxProbeGap);
        } else {
            d.planned = 1;
            d.reason = "off";
        }
        d.predicted_speedup = plain > 0 ? speed(d.planned, a) / plain : 1.0;
    }
    d.verified = d.planned;
    return d;
}

void WidthPolicy::trim(WidthDecision& d, int64_t drafted, const std::vector<float>& confidence) const {
    if (drafted + 1 < d.verified) {
        d.verified = drafted + 1;
        d.reason += ", short draft";
    }
    if (fixed_ || confidence.empty() || d.verified <= 1) return;
    // The draft cost is spent; choose the verify width with the most expected tokens per
    // verify second, each candidate's chance the geometric mean of the running estimate
    // and the drafter's own confidence.
    std::vector<double> a = acceptance();
    for (size_t j = 0; j < a.size() && j < confidence.size(); ++j) {
        a[j] = std::sqrt(a[j] * std::clamp((double)confidence[j], 0.0, 1.0));
    }
    int64_t best = 1;
    double best_rate = 0.0;
    for (int64_t w = 1; w <= d.verified; ++w) {
        const double rate = expected_tokens(w, a) / cost(w);
        if (rate > best_rate) best = w, best_rate = rate;
    }
    if (best < d.verified) {
        d.verified = best;
        d.reason += ", confidence";
    }
}

void WidthPolicy::record_draft(double seconds) {
    // As for verifies: the second timing replaces the first, later ones are averaged in.
    draft_s_ = draft_n_ >= 2 ? (1 - kEma) * draft_s_ + kEma * seconds : seconds;
    draft_measured_ = true;
    ++draft_n_;
}

void WidthPolicy::record_verify(int64_t width, double seconds) {
    if (width < 1 || width > max_width_) return;
    double& v = verify_s_[(size_t)width];
    int64_t& n = verify_n_[(size_t)width];
    // The second timing of a width replaces the first (which may carry one-time costs: cold
    // caches, first touches), later ones are averaged in.
    v = n >= 2 ? (1 - kEma) * v + kEma * seconds : std::max(seconds, 1e-12);
    ++n;
}

void WidthPolicy::record_accepted(int64_t candidates, int64_t accepted) {
    // Candidate j was tried iff the j - 1 before it were accepted.
    for (int64_t j = 0; j < candidates && j < (int64_t)tried_.size(); ++j) {
        tried_[(size_t)j] = kDecay * tried_[(size_t)j] + 1.0;
        accepted_[(size_t)j] = kDecay * accepted_[(size_t)j] + (j < accepted ? 1.0 : 0.0);
        if (j >= accepted) break;  // later candidates were never tested
    }
}

}  // namespace ds4
