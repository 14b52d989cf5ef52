#include "spec/acceptance.h"

#include <cstddef>

namespace ds4 {

namespace {

// p without `token`, renormalised (what is left to draw from after a rejection).
Candidates residual(const Candidates& p, int32_t token) {
    Candidates r;
    double kept = 0.0;
    for (std::size_t i = 0; i < p.ids.size(); ++i) {
        if (p.ids[i] == token) continue;
        r.ids.push_back(p.ids[i]);
        r.probs.push_back(p.probs[i]);
        kept += p.probs[i];
    }
    for (auto& v : r.probs) v /= kept;
    return r;
}

double prob_of(const Candidates& p, int32_t token) {
    for (std::size_t i = 0; i < p.ids.size(); ++i) {
        if (p.ids[i] == token) return p.probs[i];
    }
    return 0.0;  // filtered out: plain sampling could not draw it
}

}  // namespace

Acceptance accept_draft(Sampler& sampler, const float* rows, int64_t vocab, const std::vector<int32_t>& draft,
                        std::vector<int32_t>& history) {
    const std::size_t base = history.size();
    const bool greedy = sampler.params().greedy();
    Acceptance out;
    for (std::size_t j = 0; j <= draft.size(); ++j) {
        const Candidates p = sampler.distribution(rows + (int64_t)j * vocab, history);
        if (j == draft.size()) {  // every candidate accepted: the bonus token
            out.next = sampler.draw(p);
            break;
        }
        const int32_t c = draft[j];
        bool accept;
        if (greedy) {
            accept = p.ids[0] == c;
        } else {
            const double pc = prob_of(p, c);
            // No draw where the answer is certain (pc 0 or 1); the rule stays exact.
            accept = pc >= 1.0 || (pc > 0.0 && sampler.uniform() < pc);
        }
        if (!accept) {
            out.next = greedy ? p.ids[0] : sampler.draw(residual(p, c));
            break;
        }
        history.push_back(c);
        ++out.accepted;
    }
    history.resize(base);
    return out;
}

Acceptance accept_draft_greedy(const int32_t* argmax, const std::vector<int32_t>& draft) {
    Acceptance out;
    while ((std::size_t)out.accepted < draft.size() && argmax[out.accepted] == draft[(std::size_t)out.accepted]) {
        ++out.accepted;
    }
    out.next = argmax[out.accepted];
    return out;
}

}  // namespace ds4
