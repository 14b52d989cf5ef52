#include "spec/speculator.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "spec/acceptance.h"

namespace ds4 {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string layer_list(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

// The policy's max width: 1 + the longest draft, at most 8.
int64_t max_width(const Proposer& p) { return std::min<int64_t>(8, 1 + std::max<int64_t>(p.max_draft(), 0)); }

// A fixed width beyond what the drafter can fill is capped at its max width (recorded by
// the caller, which sees policy().max_width()); outside 0..8 is an error.
int64_t checked_width(int64_t width, const Proposer& p) {
    if (width < 0 || width > 8) {
        throw ArgumentError("speculation: width must be 1..8 (or 0 for auto), got " + std::to_string(width));
    }
    return std::min(width, max_width(p));
}

}  // namespace

Ds4Speculator::Ds4Speculator(Ds4Session& target, std::shared_ptr<Proposer> proposer, const SamplingParams& params,
                             int64_t width, const WidthPolicy* carry)
    : s_(target), proposer_(std::move(proposer)), sampler_(params, (int32_t)target.model().hparams().n_vocab),
      policy_(checked_width(width, *proposer_), max_width(*proposer_)),
      vocab_(target.model().hparams().n_vocab) {
    const std::vector<int64_t> want = proposer_->capture_layers();
    const auto& opt = target.options();
    if (!want.empty() && (opt.capture_layers != want || opt.capture_input != proposer_->capture_input())) {
        throw ArgumentError("speculation: the " + proposer_->name() + " drafter reads the features of target layers " +
                            layer_list(want) + " at their " + (proposer_->capture_input() ? "input" : "output") +
                            ", but the session captures " + layer_list(opt.capture_layers) + " at their " +
                            (opt.capture_input ? "input" : "output") +
                            " (open it with capture_layers = the drafter's capture layers)");
    }
    if (carry) {
        if (carry->max_width() != policy_.max_width() || carry->fixed() != policy_.fixed()) {
            throw ArgumentError("speculation: the carried width policy is for another drafter or width");
        }
        policy_ = *carry;
    }
    target.reserve_logits_rows(policy_.max_width());
    feat_width_ = want.empty() ? 0 : (int64_t)want.size() * target.model().hparams().n_embd;
    window_ = want.empty() ? 0 : proposer_->max_context();
    stats_.tried_at.assign((size_t)policy_.max_width() - 1, 0);
    stats_.accepted_at.assign((size_t)policy_.max_width() - 1, 0);
    stats_.accept_length.assign((size_t)policy_.max_width(), 0);
}

void Ds4Speculator::keep_features(const float* rows, int64_t n) {
    if (!feat_width_ || n <= 0) return;
    features_.insert(features_.end(), rows, rows + n * feat_width_);
    // Compact only when twice the window is held (amortised: no copy per step).
    const auto held = (int64_t)features_.size() / feat_width_;
    if (held > 2 * window_) features_.erase(features_.begin(), features_.end() - window_ * feat_width_);
}

int32_t Ds4Speculator::begin(const float* logits, std::vector<int32_t> history) {
    history_ = std::move(history);
    features_.clear();
    const auto& cap = s_.captured();
    if (feat_width_) {
        const int64_t rows = (int64_t)cap.size() / feat_width_, keep = std::min(rows, window_);
        keep_features(cap.data() + (rows - keep) * feat_width_, keep);
    }
    const auto t0 = Clock::now();
    pending_ = sampler_.sample(logits, history_);
    stats_.sample_s += since(t0);
    history_.push_back(pending_);
    ++stats_.emitted;
    last_emitted_ = 0;
    return pending_;
}

SpecStep Ds4Speculator::step(int64_t limit, bool want_rows) {
    if (pending_ < 0) throw ArgumentError("speculation: step() before begin()");
    limit = std::min(limit, s_.max_ctx() - s_.pos());
    if (limit < 1) {
        throw ArgumentError("speculation: no room to step (limit " + std::to_string(limit) + " at position " +
                            std::to_string(s_.pos()) + " of max_ctx " + std::to_string(s_.max_ctx()) + ")");
    }
    SpecStep out;
    WidthDecision d = policy_.plan(s_.pos(), limit);
    Draft draft;
    if (d.planned > 1) {
        const int64_t held = feat_width_ ? (int64_t)features_.size() / feat_width_ : 0;
        const int64_t n_ctx = std::min(held, window_);
        DraftRequest r;
        r.features = feat_width_ ? features_.data() + (held - n_ctx) * feat_width_ : nullptr;
        r.n_ctx = n_ctx;
        r.pending = pending_;
        r.pos = s_.pos();
        r.max_tokens = d.planned - 1;
        const auto t0 = Clock::now();
        draft = proposer_->propose(r);
        const double dt = since(t0);
        stats_.draft_s += dt;
        policy_.record_draft(dt);
        ++stats_.drafts;
        stats_.proposed += (int64_t)draft.tokens.size();
    }
    policy_.trim(d, (int64_t)draft.tokens.size(), draft.confidence);
    draft.tokens.resize((size_t)d.verified - 1);

    std::vector<int32_t> batch{pending_};
    batch.insert(batch.end(), draft.tokens.begin(), draft.tokens.end());
    // Plain greedy with no rows asked for needs each row's argmax only: found where the logits
    // are, so a GPU sends back an id a row instead of the rows.
    const bool ids_only = !want_rows && sampler_.params().plain_greedy();
    std::vector<float> rows;
    Ds4Session::TopK top;
    auto t0 = Clock::now();
    if (ids_only) {
        top = s_.verify_top(batch, 1);
    } else {
        rows = s_.verify(batch);
    }
    const double vt = since(t0);
    stats_.verify_s += vt;
    policy_.record_verify(d.verified, vt);

    t0 = Clock::now();
    const Acceptance acc = ids_only ? accept_draft_greedy(top.ids.data(), draft.tokens)
                                    : accept_draft(sampler_, rows.data(), vocab_, draft.tokens, history_);
    stats_.sample_s += since(t0);

    const int64_t width = (int64_t)batch.size(), reject = width - 1 - acc.accepted;
    t0 = Clock::now();
    if (reject > 0) s_.rewind(reject);
    stats_.rewind_s += since(t0);
    keep_features(s_.captured().data(), acc.accepted + 1);

    out.tokens.assign(draft.tokens.begin(), draft.tokens.begin() + acc.accepted);
    out.tokens.push_back(acc.next);
    history_.insert(history_.end(), out.tokens.begin(), out.tokens.end());
    pending_ = acc.next;
    if (want_rows) out.rows.assign(rows.begin(), rows.begin() + (acc.accepted + 1) * vocab_);

    ++stats_.steps;
    stats_.emitted += (int64_t)out.tokens.size();
    if (width == 1) {
        ++stats_.plain_steps;
    } else {
        stats_.verified += width - 1;
        stats_.accepted += acc.accepted;
        ++stats_.accept_length[(size_t)acc.accepted];
        for (int64_t j = 0; j < width - 1; ++j) {
            ++stats_.tried_at[(size_t)j];
            if (j < acc.accepted) {
                ++stats_.accepted_at[(size_t)j];
            } else {
                break;  // candidates after the first rejection were never tested
            }
        }
        policy_.record_accepted(width - 1, acc.accepted);
    }
    d.accepted = acc.accepted;
    decisions_.push_back(d);
    out.decision = d;
    last_emitted_ = (int64_t)out.tokens.size();
    return out;
}

void Ds4Speculator::keep_first(int64_t keep) {
    if (keep < 1 || keep > last_emitted_) {
        throw ArgumentError("speculation: keep_first(" + std::to_string(keep) + ") outside 1.." +
                            std::to_string(last_emitted_) + " (the last step's tokens)");
    }
    const int64_t drop = last_emitted_ - keep;
    if (drop == 0) return;
    // The target holds every emitted token but the last; after the cut the new last
    // (emitted[keep - 1]) is pending, so `drop` fed positions go.
    s_.rewind(drop);
    if (feat_width_) features_.resize(features_.size() - (size_t)(drop * feat_width_));
    history_.resize(history_.size() - (size_t)drop);
    pending_ = history_.back();
    stats_.emitted -= drop;
    stats_.discarded += drop;
    last_emitted_ = keep;
}

void Ds4Speculator::replace_pending(int32_t token) {
    if (pending_ < 0) throw ArgumentError("speculation: replace_pending() before begin()");
    if (token < 0 || token >= vocab_) {
        throw ArgumentError("speculation: token " + std::to_string(token) + " is outside the vocabulary 0.." +
                            std::to_string(vocab_ - 1));
    }
    pending_ = token;
    history_.back() = token;
    last_emitted_ = 0;
}

}  // namespace ds4
