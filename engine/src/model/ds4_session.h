// One sequence's entry points (ds4-model.md section 4) over state the backend owns.
//
// All entry points run the same forward over blocks of consecutive tokens (at most
// kBlock for decode and verify, kPrefillBlock for a batched prefill; model/ds4_block.h):
// every matmul serves all tokens of the block as columns (per-column bits are
// independent of the block width); the sequential parts (ring, compressor and indexer
// updates) walk the tokens in order inside each layer, kBlock at a time, and each
// token then attends over the state as it stood at its own position. So verify rows
// are bitwise identical to decoding the tokens one by one. Token ids go to the
// backend, logits come back; a call is a fixed sequence of backend operations with one
// synchronisation at the end.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/ds4_block.h"
#include "model/ds4_model.h"
#include "model/ds4_profile.h"

namespace ds4 {

struct Ds4SessionOptions {
    int64_t max_ctx = 4096;
    bool fp8_kv = true;       // D: FP8-E4M3 round trip of stored KV rows (false: llama.cpp)
    bool indexer_fp4 = true;  // D: FP4 round trip of indexer rows and queries (false: llama.cpp)
    // Layer capture (a drafter's features): after each forward, the mean of the n_hc
    // streams of every token at the input (capture_input) or the output of these layers.
    std::vector<int64_t> capture_layers;
    bool capture_input = false;
};

// A session's state at one position, taken by Ds4Session::snapshot. It holds a
// deep copy, so the session may run on; restore() puts the copy back (again by
// copying, so one snapshot can be restored any number of times).
struct Ds4Snapshot {
    const void* owner_model = nullptr;  // the Ds4Model the state belongs to
    int64_t pos = 0;
    int64_t max_ctx = 0;
    bool fp8_kv = true, indexer_fp4 = true;
    std::vector<int32_t> tokens;  // the token ids the state covers, positions 0 .. pos-1
    std::shared_ptr<const SeqState> state;
};

// A snapshot of `model` rebuilt from a state image (a snapshot file), for sessions with
// these options; ArgumentError if the image or the tokens do not fit.
Ds4Snapshot snapshot_from_image(const std::shared_ptr<const Ds4Model>& model, const Ds4SessionOptions& opt,
                                const SeqStateImage& image, std::vector<int32_t> tokens);

class Ds4Session {
public:
    Ds4Session(std::shared_ptr<const Ds4Model> model, const Ds4SessionOptions& opt);

    const Ds4Model& model() const { return *model_; }
    int64_t pos() const { return state_->pos(); }
    int64_t max_ctx() const { return opt_.max_ctx; }
    const Ds4SessionOptions& options() const { return opt_; }
    int64_t state_bytes() const { return state_->bytes(); }

    // The state after the tokens fed so far; restore() returns the session to it.
    Ds4Snapshot snapshot() const;
    // Throws ArgumentError (and changes nothing) for a snapshot of another model or of a
    // session with other options.
    void restore(const Ds4Snapshot& snap);

    // Takes back the last n positions (rejected draft tokens) at a cost independent of
    // the context: the next forward continues as if they had never been fed, bitwise.
    // n may reach max_rewind(); ArgumentError (and no change) beyond it.
    void rewind(int64_t n);
    // How many positions rewind() can take back now (up to kMaxRewind, counted from the
    // highest position ever stored).
    int64_t max_rewind() const { return state_->pos() - state_->rewind_floor(); }

    // Logits [n_vocab] of one token.
    std::vector<float> decode(int32_t token);
    // Logits of every token, row-major [tokens.size()][n_vocab].
    std::vector<float> verify(const std::vector<int32_t>& tokens);
    // The k best logits of each token (Backend::row_top_k: largest first, ties to the lower
    // id), found where the logits are computed: only ids and values [tokens][k] come back.
    // Greedy decoding needs k = 1; a margin, k = 2. 1 <= k <= kMaxRowTopK.
    struct TopK {
        int64_t k = 0;
        std::vector<int32_t> ids;
        std::vector<float> vals;
    };
    TopK decode_top(int32_t token, int64_t k);
    TopK verify_top(const std::vector<int32_t>& tokens, int64_t k);
    // Greedy decoding of n steps without the host between them: feeds token, then each
    // step's argmax (decode_top's, ties to the lower id) to the next; returns the n argmaxes.
    // The session has then fed token and the first n - 1 of them (the last is pending, as
    // after decode_top): a caller that stops at id i takes back the n - 1 - i fed after it
    // with rewind. 1 <= n <= kMaxRewind; no layer capture.
    std::vector<int32_t> decode_greedy(int32_t token, int64_t n);
    // Feeds the tokens; returns the logits of the last one. exact: one token at
    // a time; batched: blocks of up to prefill_block() tokens ending on ratio-4
    // boundaries (same results, as the forward is block-width invariant).
    // stop_requested, if given, is asked after each block: true stops the prefill
    // there (the blocks fed so far stay fed) and the result is empty (Ctrl-C).
    std::vector<float> prefill(const std::vector<int32_t>& tokens, bool exact,
                               const std::function<bool()>& stop_requested = {});

    // The token ids fed so far (positions 0 .. pos()-1; rewind and restore follow).
    const std::vector<int32_t>& tokens() const { return tokens_; }

    // Features captured during the last decode / verify / prefill, row-major
    // [tokens][capture_layers.size()][n_embd] (empty without capture layers).
    const std::vector<float>& captured() const { return captured_; }

    // Sizes the logits buffer for verifies of up to `rows` tokens now, so that the first
    // verify of a width is not slower than the next (a speculative loop times them).
    void reserve_logits_rows(int64_t rows);

    // Most tokens one attention step stores before it attends (the backend's ring keeps this
    // many extra rows), and one decode or verify forward holds.
    static constexpr int64_t kBlock = 32;
    // Most tokens one prefill forward carries through the projections and the experts (its
    // attention runs kBlock at a time): every matrix, above all each routed expert, is read
    // once for this many tokens instead of once for kBlock. DS4KIT_PREFILL_BLOCK (a multiple of
    // 4 from 4 to kMaxPrefillBlock) sets another size for a session: no bit depends on it (batch
    // invariance), only speed and the block buffers' memory (about 0.5 MB a token at the real
    // widths). The default is kPrefillBlock on the CPU and kGpuPrefillBlock on a GPU backend,
    // whose tensor-core GEMMs gain from more columns a matrix (step 36 on an H100, 2048 tokens:
    // blocks of 256 / 1024 / 2048 prefilled 3636 / 4035 / 4107 tok/s).
    static constexpr int64_t kPrefillBlock = 256, kGpuPrefillBlock = 1024, kMaxPrefillBlock = 4096;
    int64_t prefill_block() const { return prefill_block_; }
    // Most positions a rewind takes back (the rings keep this many extra positions).
    static constexpr int64_t kMaxRewind = 32;

    // Per-phase wall-clock seconds of every forward since the last reset (when enabled).
    PhaseClock& phase_clock() { return clock_; }

private:
    // Runs tokens [0, n) (n <= prefill_block(); with top, n <= kBlock) at positions pos()..
    // and advances. Appends the logits of tokens with want_logits[i] to logits (row-major,
    // in token order).
    // With top (every row wanted), the rows' top->k best come back into top instead.
    void forward(const int32_t* tokens, int64_t n, const bool* want_logits, std::vector<float>& logits,
                 TopK* top = nullptr);
    // The backend calls of that forward (embed, layers, head into logits_buf_), m wanted rows.
    void issue_forward(int64_t n, int64_t p0, const bool* want_logits, int64_t m);
    // Those calls and the top-k (k > 0) as one recorded step where every row is wanted.
    void issue_step(int64_t n, int64_t p0, const bool* want_logits, int64_t m, int64_t k);
    void ensure_top_buffers();  // top_ids_buf_ / top_vals_buf_, once
    // What a recorded step of n tokens at p0 depends on (Backend::begin_step).
    std::vector<int64_t> step_key(int64_t p0, int64_t n, int64_t top_k) const;
    void check_tokens(const int32_t* tokens, int64_t n) const;  // check_ids and check_room
    void check_ids(const int32_t* tokens, int64_t n) const;     // every id in the vocabulary
    void check_room(int64_t n) const;                           // n more positions fit max_ctx

    std::shared_ptr<const Ds4Model> model_;
    Ds4SessionOptions opt_;
    Ds4Numerics numerics_;
    std::unique_ptr<SeqState> state_;
    PhaseClock clock_;
    int64_t prefill_block_;  // before act_, which it sizes
    Ds4Activations act_;  // block buffers in backend memory, sized once for prefill_block_ tokens
    Ds4BlockRunner runner_;
    std::unique_ptr<DeviceBuffer> logits_buf_, capture_buf_;
    std::unique_ptr<DeviceBuffer> top_ids_buf_, top_vals_buf_;  // kBlock x kMaxRowTopK, on first use
    std::unique_ptr<DeviceBuffer> chain_ids_buf_;               // kMaxRewind ids of decode_greedy, on first use
    int64_t logits_rows_ = 0;  // rows logits_buf_ holds
    int64_t logits_generation_ = 0;  // times logits_buf_ was reallocated
    uint64_t uid_;                   // unique per session object for the process
    std::vector<float> captured_;
    std::vector<int32_t> tokens_;
};

}  // namespace ds4
