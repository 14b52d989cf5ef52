#include "model/ds4_session.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/error.h"

namespace ds4 {

namespace {

bool profile_from_env() {
    const char* v = std::getenv("DS4KIT_PROFILE");
    return v && *v && std::string(v) != "0";
}

// DS4KIT_PREFILL_BLOCK, or the default for the backend's kind.
int64_t prefill_block_from_env(const Backend& be) {
    const char* v = std::getenv("DS4KIT_PREFILL_BLOCK");
    if (!v || !*v) return be.kind() == "cpu" ? Ds4Session::kPrefillBlock : Ds4Session::kGpuPrefillBlock;
    char* end = nullptr;
    const long long b = std::strtoll(v, &end, 10);
    if (*end != '\0' || b < 4 || b > Ds4Session::kMaxPrefillBlock || b % 4 != 0) {
        throw ArgumentError(std::string("DS4KIT_PREFILL_BLOCK is '") + v + "'; it must be a multiple of 4 from 4 to " +
                            std::to_string(Ds4Session::kMaxPrefillBlock) + " (tokens a batched prefill block)");
    }
    return (int64_t)b;
}

SeqShape seq_shape(const Ds4Hparams& hp, int64_t max_ctx) {
    SeqShape shape;
    shape.ratios = hp.compress_ratios;
    shape.n_swa = hp.n_swa;
    shape.head_dim = hp.head_dim;
    shape.idx_dim = hp.idx_head_dim;
    shape.max_ctx = max_ctx;
    shape.max_block = Ds4Session::kBlock;
    shape.max_rewind = Ds4Session::kMaxRewind;
    return shape;
}

int64_t checked_max_ctx(int64_t max_ctx) {
    if (max_ctx < 1) throw ArgumentError("max_ctx must be at least 1, got " + std::to_string(max_ctx));
    return max_ctx;
}

std::atomic<uint64_t> next_session_uid{1};

const bool kAllRows[Ds4Session::kBlock] = {true, true, true, true, true, true, true, true, true, true, true,
                                           true, true, true, true, true, true, true, true, true, true, true,
                                           true, true, true, true, true, true, true, true, true, true};

}  // namespace

Ds4Session::Ds4Session(std::shared_ptr<const Ds4Model> model, const Ds4SessionOptions& opt)
    : model_(std::move(model)),
      opt_(opt),
      numerics_{opt.fp8_kv, opt.indexer_fp4},
      state_(model_->backend().new_seq_state(seq_shape(model_->hparams(), checked_max_ctx(opt.max_ctx)))),
      prefill_block_(prefill_block_from_env(model_->backend())),
      act_(model_->backend(), model_->hparams(), prefill_block_),
      runner_(model_->backend(), model_->hparams(), clock_),
      uid_(next_session_uid++) {
    const Ds4Hparams& hp = model_->hparams();
    clock_.enabled = profile_from_env();
    tokens_.reserve((size_t)opt_.max_ctx);  // 4 bytes a position: no growth while feeding
    for (int64_t il : opt_.capture_layers) {
        if (il < 0 || il >= hp.n_layer) {
            throw ArgumentError("capture layer " + std::to_string(il) + " is outside the model's layers 0.." +
                                std::to_string(hp.n_layer - 1));
        }
    }
    const int64_t n_cap = (int64_t)opt_.capture_layers.size();
    if (n_cap) capture_buf_ = model_->backend().alloc((size_t)(prefill_block_ * n_cap * hp.n_embd) * sizeof(float));
}

Ds4Snapshot Ds4Session::snapshot() const {
    Ds4Snapshot s;
    s.owner_model = model_.get();
    s.pos = state_->pos();
    s.max_ctx = opt_.max_ctx;
    s.fp8_kv = opt_.fp8_kv;
    s.indexer_fp4 = opt_.indexer_fp4;
    s.tokens = tokens_;
    s.state = state_->clone();
    return s;
}

Ds4Snapshot snapshot_from_image(const std::shared_ptr<const Ds4Model>& model, const Ds4SessionOptions& opt,
                                const SeqStateImage& image, std::vector<int32_t> tokens) {
    if ((int64_t)tokens.size() != image.pos) {
        throw ArgumentError("snapshot: " + std::to_string(tokens.size()) + " token ids for a state at position " +
                            std::to_string(image.pos));
    }
    const int64_t V = model->hparams().n_vocab;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < 0 || tokens[i] >= V) {
            throw ArgumentError("snapshot: token id " + std::to_string(tokens[i]) + " (at position " +
                                std::to_string(i) + ") is outside the vocabulary 0.." + std::to_string(V - 1));
        }
    }
    Ds4Snapshot s;
    s.owner_model = model.get();
    s.pos = image.pos;
    s.max_ctx = checked_max_ctx(opt.max_ctx);
    s.fp8_kv = opt.fp8_kv;
    s.indexer_fp4 = opt.indexer_fp4;
    s.tokens = std::move(tokens);
    s.state = model->backend().seq_state_from_image(seq_shape(model->hparams(), opt.max_ctx), image);
    return s;
}

void Ds4Session::restore(const Ds4Snapshot& snap) {
    if (!snap.state || snap.owner_model != model_.get()) {
        throw ArgumentError("restore: the snapshot was taken from a session of another model");
    }
    if (snap.max_ctx != opt_.max_ctx || snap.fp8_kv != opt_.fp8_kv || snap.indexer_fp4 != opt_.indexer_fp4) {
        throw ArgumentError("restore: the snapshot's session options (max_ctx " + std::to_string(snap.max_ctx) +
                            ", fp8_kv " + std::to_string(snap.fp8_kv) + ", indexer_fp4 " +
                            std::to_string(snap.indexer_fp4) + ") differ from this session's (max_ctx " +
                            std::to_string(opt_.max_ctx) + ", fp8_kv " + std::to_string(opt_.fp8_kv) +
                            ", indexer_fp4 " + std::to_string(opt_.indexer_fp4) + ")");
    }
    state_ = snap.state->clone();
    tokens_ = snap.tokens;
}

void Ds4Session::rewind(int64_t n) {
    if (n < 0) throw ArgumentError("rewind needs n >= 0, got " + std::to_string(n));
    if (n > max_rewind()) {
        throw ArgumentError("rewind(" + std::to_string(n) + "): only " + std::to_string(max_rewind()) +
                            " positions can be taken back now (at most " + std::to_string(kMaxRewind) +
                            " from the highest position stored, " + std::to_string(state_->pos()) + " stored)");
    }
    state_->rewind_to(state_->pos() - n);
    tokens_.resize((size_t)state_->pos());
}

void Ds4Session::reserve_logits_rows(int64_t rows) {
    if (logits_rows_ >= rows) return;
    logits_buf_ = model_->backend().alloc((size_t)(rows * model_->hparams().n_vocab) * sizeof(float));
    logits_rows_ = rows;
    ++logits_generation_;
}

void Ds4Session::check_tokens(const int32_t* tokens, int64_t n) const {
    check_ids(tokens, n);
    check_room(n);
}

void Ds4Session::check_ids(const int32_t* tokens, int64_t n) const {
    const int64_t V = model_->hparams().n_vocab;
    for (int64_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || tokens[i] >= V) {
            throw ArgumentError("token id " + std::to_string(tokens[i]) + " (at index " + std::to_string(i) +
                                ") is outside the vocabulary 0.." + std::to_string(V - 1));
        }
    }
}

void Ds4Session::check_room(int64_t n) const {
    if (pos() + n > opt_.max_ctx) {
        throw ArgumentError("context overflow: position " + std::to_string(pos()) + " + " + std::to_string(n) +
                            " tokens exceeds max_ctx " + std::to_string(opt_.max_ctx));
    }
}

std::vector<float> Ds4Session::decode(int32_t token) {
    std::vector<float> logits;  // the one allocation per call: the result handed back
    logits.reserve((size_t)model_->hparams().n_vocab);
    captured_.clear();
    forward(&token, 1, kAllRows, logits);
    return logits;
}

Ds4Session::TopK Ds4Session::decode_top(int32_t token, int64_t k) {
    return verify_top(std::vector<int32_t>{token}, k);
}

Ds4Session::TopK Ds4Session::verify_top(const std::vector<int32_t>& tokens, int64_t k) {
    if (tokens.empty()) throw ArgumentError("verify needs at least one token");
    const int64_t n = (int64_t)tokens.size();
    check_row_top_k("session", n, model_->hparams().n_vocab, k);
    check_tokens(tokens.data(), n);  // fail before any state changes
    TopK top;
    top.k = k;
    std::vector<float> unused;
    captured_.clear();
    for (int64_t b = 0; b < n; b += kBlock) forward(tokens.data() + b, std::min(kBlock, n - b), kAllRows, unused, &top);
    return top;
}

std::vector<float> Ds4Session::verify(const std::vector<int32_t>& tokens) {
    if (tokens.empty()) throw ArgumentError("verify needs at least one token");
    const int64_t n = (int64_t)tokens.size();
    check_tokens(tokens.data(), n);  // fail before any state changes
    std::vector<float> logits;
    logits.reserve((size_t)(n * model_->hparams().n_vocab));
    captured_.clear();
    for (int64_t b = 0; b < n; b += kBlock) forward(tokens.data() + b, std::min(kBlock, n - b), kAllRows, logits);
    return logits;
}

std::vector<float> Ds4Session::prefill(const std::vector<int32_t>& tokens, bool exact,
                                       const std::function<bool()>& stop_requested) {
    if (tokens.empty()) throw ArgumentError("prefill needs at least one token");
    check_tokens(tokens.data(), (int64_t)tokens.size());  // fail before any state changes
    const int64_t n = (int64_t)tokens.size(), block = exact ? 1 : prefill_block_;
    std::vector<float> logits;
    captured_.clear();
    const std::unique_ptr<bool[]> want(new bool[(size_t)block]);
    for (int64_t b = 0; b < n;) {
        const int64_t len = ratio4_piece(pos(), n - b, block);
        std::fill(want.get(), want.get() + len, false);
        if (b + len == n) want[len - 1] = true;  // only the last token's logits are returned
        forward(tokens.data() + b, len, want.get(), logits);
        b += len;
        if (stop_requested && b < n && stop_requested()) return {};
    }
    return logits;
}

std::vector<int64_t> Ds4Session::step_key(int64_t p0, int64_t n, int64_t top_k) const {
    // Everything the step's calls depend on besides positions and the state: this session's
    // buffers (its id; the logits buffer's growths; which of X / X2 holds the streams), the
    // options that pick calls, and the one branch positions take (the indexer, once a token
    // sees more than top_k rows).
    const Ds4Hparams& hp = model_->hparams();
    return {(int64_t)uid_,
            logits_generation_,
            (int64_t)(uintptr_t)act_.X.get(),
            numerics_.fp8_kv ? 1 : 0,
            numerics_.indexer_fp4 ? 1 : 0,
            (p0 + n) / 4 > hp.idx_top_k ? 1 : 0,
            top_k};
}

void Ds4Session::forward(const int32_t* tokens, int64_t n, const bool* want_logits, std::vector<float>& logits,
                         TopK* top) {
    check_tokens(tokens, n);
    const Ds4Hparams& hp = model_->hparams();
    Backend& be = model_->backend();
    const int64_t E = hp.n_embd, p0 = pos();
    const int64_t n_cap = (int64_t)opt_.capture_layers.size(), ldc = n_cap * E;
    const int64_t m = std::count(want_logits, want_logits + n, true);
    // Sized for the most rows asked so far (decode and prefill need one, a verify up to
    // kBlock): grows a few times per session, never per token.
    if (m > 0) reserve_logits_rows(m);
    const int64_t k = top ? top->k : 0;
    if (k) ensure_top_buffers();

    be.upload(act_.tokens, tokens, n);
    issue_step(n, p0, want_logits, m, k);
    state_->commit(n);
    tokens_.insert(tokens_.end(), tokens, tokens + n);

    if (k) {
        const size_t off = top->ids.size();
        top->ids.resize(off + (size_t)(m * k));
        top->vals.resize(off + (size_t)(m * k));
        be.download(top->ids.data() + off, Dev<const int32_t>(top_ids_buf_->as<int32_t>()), m * k);
        be.download(top->vals.data() + off, Dev<const float>(top_vals_buf_->as<float>()), m * k);
    } else if (m > 0) {
        const size_t off = logits.size();
        logits.resize(off + (size_t)(m * hp.n_vocab));
        be.download(logits.data() + off, logits_buf_->as<const float>(), m * hp.n_vocab);
    }
    if (n_cap) {
        const size_t c0 = captured_.size();
        captured_.resize(c0 + (size_t)(n * ldc));
        be.download(captured_.data() + c0, Dev<const float>(capture_buf_->as<float>()), n * ldc);
    }
    be.synchronize();
}

void Ds4Session::ensure_top_buffers() {
    if (top_ids_buf_) return;  // once per session, before any step records its address
    Backend& be = model_->backend();
    top_ids_buf_ = be.alloc((size_t)(kBlock * kMaxRowTopK) * sizeof(int32_t));
    top_vals_buf_ = be.alloc((size_t)(kBlock * kMaxRowTopK) * sizeof(float));
}

void Ds4Session::issue_step(int64_t n, int64_t p0, const bool* want_logits, int64_t m, int64_t k) {
    Backend& be = model_->backend();
    // Decode and verify (every token's logits) run as one backend step, which a GPU backend
    // records once and replays for later steps of the same key.
    const bool as_step = m == n;
    if (as_step && be.begin_step(*state_, p0, n, step_key(p0, n, k))) return;
    try {
        issue_forward(n, p0, want_logits, m);
        if (k) {
            be.row_top_k(logits_buf_->as<const float>(), m, model_->hparams().n_vocab, k, top_ids_buf_->as<int32_t>(),
                         top_vals_buf_->as<float>());
        }
    } catch (...) {
        if (as_step) be.end_step(false);
        throw;
    }
    if (as_step) be.end_step(true);
}

std::vector<int32_t> Ds4Session::decode_greedy(int32_t token, int64_t n) {
    if (n < 1 || n > kMaxRewind) {
        throw ArgumentError("decode_greedy of " + std::to_string(n) + " tokens: 1 .. " + std::to_string(kMaxRewind) +
                            " (a chain's tokens past a stop must stay rewindable)");
    }
    if (!opt_.capture_layers.empty()) {
        throw ArgumentError("decode_greedy captures no layer features; this session captures layers: use decode_top");
    }
    check_ids(&token, 1);
    check_room(n);  // the chain feeds token and n - 1 argmaxes
    Backend& be = model_->backend();
    reserve_logits_rows(1);
    ensure_top_buffers();
    if (!chain_ids_buf_) chain_ids_buf_ = be.alloc((size_t)kMaxRewind * sizeof(int32_t));
    const Dev<int32_t> chain = chain_ids_buf_->as<int32_t>();
    const Dev<int32_t> best = top_ids_buf_->as<int32_t>();
    captured_.clear();
    const bool want = true;
    int64_t done = 0;
    try {
        // Step j feeds step j - 1's argmax straight from the device: the same recorded step as
        // decode_top(token, 1), and nothing comes back to the host until the chain ends.
        be.upload(act_.tokens, &token, 1);
        for (; done < n; ++done) {
            if (done > 0) be.copy_ids(act_.tokens, best, 1);
            issue_step(1, pos(), &want, 1, 1);
            be.copy_ids(chain + done, best, 1);
            state_->commit(1);
        }
        std::vector<int32_t> ids((size_t)n);
        be.download(ids.data(), Dev<const int32_t>(chain), n);
        be.synchronize();
        tokens_.push_back(token);
        tokens_.insert(tokens_.end(), ids.begin(), ids.end() - 1);
        return ids;
    } catch (...) {
        state_->rewind_to(state_->pos() - done);  // the tokens fed are unknown to the host: take them back
        throw;
    }
}

void Ds4Session::issue_forward(int64_t n, int64_t p0, const bool* want_logits, int64_t m) {
    const Ds4Hparams& hp = model_->hparams();
    const Ds4Weights& w = model_->weights();
    Backend& be = model_->backend();
    const int64_t E = hp.n_embd, HC = hp.n_hc;
    const int64_t n_cap = (int64_t)opt_.capture_layers.size(), ldc = n_cap * E;
    Dev<float> cap = capture_buf_ ? capture_buf_->as<float>() : Dev<float>();
    auto capture = [&](int64_t il, bool at_input) {
        if (at_input != opt_.capture_input) return;
        for (int64_t k = 0; k < n_cap; ++k) {
            if (opt_.capture_layers[(size_t)k] == il) runner_.capture(act_, n, cap + k * E, ldc);
        }
    };

    runner_.embed(w, act_, n);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const Ds4LayerWeights& lw = w.layers[(size_t)il];
        capture(il, true);
        runner_.attn_project(lw, act_, n);
        runner_.attn_causal(lw, il, model_->rope(il), *state_, numerics_, act_, p0, n);
        runner_.attn_output(lw, act_, n);
        runner_.ffn(lw, il, act_, n);
        capture(il, false);
    }

    // Output head on the tokens whose logits are wanted: all of them (decode, verify) in
    // place, else the wanted ones gathered into X2 (a prefill block's last token).
    if (m > 0 && m < n) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; ++i) {
            if (want_logits[i]) be.copy(act_.X2 + (k++) * HC * E, act_.X + i * HC * E, HC * E);
        }
    }
    // A prefill block whose logits nobody reads skips the LM head.
    if (m > 0) runner_.head(w, m == n ? act_.X : act_.X2, act_, m, logits_buf_->as<float>());
}

}  // namespace ds4
