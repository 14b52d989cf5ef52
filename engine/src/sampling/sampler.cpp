#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>

#include "common/error.h"

namespace ds4 {

namespace {
void require(bool ok, const std::string& what) {
    if (!ok) throw ArgumentError("sampling: " + what);
}
}  // namespace

void SamplingParams::validate() const {
    require(std::isfinite(temperature), "temperature must be finite");
    require(top_k >= 0, "top_k must be >= 0 (got " + std::to_string(top_k) + ")");
    require(top_p > 0.0f && top_p <= 1.0f, "top_p must be in (0, 1] (got " + std::to_string(top_p) + ")");
    require(min_p >= 0.0f && min_p <= 1.0f, "min_p must be in [0, 1] (got " + std::to_string(min_p) + ")");
    require(repetition_penalty > 0.0f && std::isfinite(repetition_penalty),
            "repetition_penalty must be > 0 (got " + std::to_string(repetition_penalty) + ")");
    require(std::isfinite(presence_penalty), "presence_penalty must be finite");
    require(std::isfinite(frequency_penalty), "frequency_penalty must be finite");
    require(penalty_last_n >= -1, "penalty_last_n must be >= -1");
}

Sampler::Sampler(const SamplingParams& params, int32_t vocab_size)
    : params_(params), vocab_(vocab_size), rng_(params.seed) {
    params_.validate();
    require(vocab_size > 0, "vocab_size must be > 0");
}

std::vector<double> Sampler::penalised(const float* logits, const std::vector<int32_t>& history) const {
    std::vector<double> out(logits, logits + vocab_);
    for (int32_t i = 0; i < vocab_; ++i) {
        if (std::isnan(out[i])) throw ArgumentError("sampling: logits contain NaN at token id " + std::to_string(i));
    }
    const bool any_penalty = params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                             params_.frequency_penalty != 0.0f;
    if (!any_penalty || history.empty()) return out;
    size_t start = 0;
    if (params_.penalty_last_n >= 0 && history.size() > static_cast<size_t>(params_.penalty_last_n)) {
        start = history.size() - static_cast<size_t>(params_.penalty_last_n);
    }
    std::unordered_map<int32_t, int32_t> counts;
    for (size_t i = start; i < history.size(); ++i) {
        const int32_t t = history[i];
        if (t < 0 || t >= vocab_) {
            throw ArgumentError("sampling: history token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                                std::to_string(vocab_) + ")");
        }
        ++counts[t];
    }
    for (const auto& [tok, n] : counts) {
        double l = out[tok];
        if (params_.repetition_penalty != 1.0f) {
            l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
        }
        l -= params_.presence_penalty;
        l -= static_cast<double>(params_.frequency_penalty) * n;
        out[tok] = l;
    }
    return out;
}

Candidates Sampler::distribution(const float* logits, const std::vector<int32_t>& history) const {
    const std::vector<double> l = penalised(logits, history);
    Candidates c;
    if (params_.greedy()) {
        // std::max_element returns the first maximum: the lowest id wins a tie.
        const auto best = std::max_element(l.begin(), l.end());
        c.ids = {static_cast<int32_t>(best - l.begin())};
        c.probs = {1.0};
        return c;
    }
    // Canonical order: descending logit, ascending id on ties. Every filter below
    // keeps a prefix of this order, and the draw walks it, so results depend only
    // on the logits and the seed.
    std::vector<int32_t> order(vocab_);
    std::iota(order.begin(), order.end(), 0);
    auto before = [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); };
    size_t keep = order.size();
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < order.size()) {
        keep = static_cast<size_t>(params_.top_k);
        std::partial_sort(order.begin(), order.begin() + keep, order.end(), before);
    } else {
        std::sort(order.begin(), order.end(), before);
    }
    order.resize(keep);

    // Temperature, then softmax in float64 (max subtracted for stability).
    const double t = params_.temperature;
    const double top = l[order[0]] / t;
    std::vector<double> p(keep);
    double sum = 0.0;
    for (size_t i = 0; i < keep; ++i) {
        p[i] = std::exp(l[order[i]] / t - top);
        sum += p[i];
    }
    for (auto& v : p) v /= sum;

    // top-p: the smallest prefix whose mass reaches top_p (never empty).
    if (params_.top_p < 1.0f) {
        double cum = 0.0;
        size_t n = 0;
        while (n < keep) {
            cum += p[n++];
            if (cum >= params_.top_p) break;
        }
        keep = n;
    }
    // min-p: drop candidates below min_p times the most likely one.
    if (params_.min_p > 0.0f) {
        const double floor = params_.min_p * p[0];
        size_t n = 1;
        while (n < keep && p[n] >= floor) ++n;
        keep = n;
    }
    double kept = 0.0;
    for (size_t i = 0; i < keep; ++i) kept += p[i];
    c.ids.assign(order.begin(), order.begin() + keep);
    c.probs.resize(keep);
    for (size_t i = 0; i < keep; ++i) c.probs[i] = p[i] / kept;
    return c;
}

int32_t Sampler::sample(const float* logits, const std::vector<int32_t>& history) {
    return draw(distribution(logits, history));
}

int32_t Sampler::draw(const Candidates& c) {
    if (c.ids.empty()) throw ArgumentError("sampling: draw from an empty distribution");
    if (params_.greedy()) return c.ids[0];
    const double r = rng_.next_unit();
    double cum = 0.0;
    for (size_t i = 0; i < c.ids.size(); ++i) {
        cum += c.probs[i];
        if (r < cum) return c.ids[i];
    }
    return c.ids.back();  // r within rounding of 1.0
}

}  // namespace ds4
