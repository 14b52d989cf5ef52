// The device-resident seam the DeepSeek V4 model code computes through
// (ds4kit architecture.md, principle 4). The backend owns every buffer the
// forward touches: weights (bind_weights), sequence state (SeqState) and
// activations (alloc). The model code enqueues operations on Dev<> pointers into
// those buffers and never reads them: token ids go in (upload), logits or token
// ids come out (download), and whatever the host must decide (rows visible per
// layer, block splits) follows from positions. Operations are ordered as issued;
// a backend may run them asynchronously (a GPU stream), so a decode step is a
// fixed sequence of calls with one synchronize() at the end, which a CUDA/HIP
// graph can capture. The CPU backend runs each call to completion.
//
// Invariance contract (what makes verify == decode bitwise, principle 1):
//   - matmul over ncols columns gives each column exactly the bits it gets with
//     ncols = 1, whatever the thread count: work is split over output rows,
//     never over a reduction.
//   - every other call treats each token (column) on its own, with a fixed
//     reduction order; calls over several tokens may split the tokens across
//     threads, never a reduction.
// Numerics: activations are float32; norms, softmaxes, Sinkhorn, RoPE angles,
// attention and pooling reduce in double on the CPU (the oracle is float64).
// docs/backend-interface.md describes the seam for a backend's author.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "core/dev_ptr.h"
#include "core/rope_spec.h"
#include "core/top_k.h"
#include "core/weight_view.h"

namespace ds4 {

// The arguments Backend::row_top_k accepts (every backend checks them so).
inline void check_row_top_k(const char* who, int64_t n_rows, int64_t n, int64_t k) {
    if (n_rows < 0 || n < 1 || n > 0x7fffffff || k < 1 || k > n || k > kMaxRowTopK) {
        throw ArgumentError(std::string(who) + ": row_top_k: k " + std::to_string(k) + " of rows of " +
                            std::to_string(n) + " (1 <= k <= min(n, " + std::to_string(kMaxRowTopK) + "))");
    }
}

// Hyper-connection split of one sublayer for one token, stored flat as doubles:
// pre [n_hc] (weights of the sublayer input), post [n_hc] (gates of its output),
// comb [n_hc * n_hc] (comb[r * n_hc + c] = M[r][c] after Sinkhorn).
inline int64_t hc_split_size(int64_t n_hc) { return 2 * n_hc + n_hc * n_hc; }

// Shape of one sequence's attention state (ds4-model.md section 4).
struct SeqShape {
    std::vector<int64_t> ratios;  // compress ratio of every layer (0, 4 or 128)
    int64_t n_swa = 0;            // raw window length
    int64_t head_dim = 0;         // KV row length
    int64_t idx_dim = 0;          // indexer row length (ratio-4 layers)
    int64_t max_ctx = 0;          // positions the sequence may reach
    int64_t max_block = 0;        // most tokens one forward block stores before it attends
    int64_t max_rewind = 0;       // most positions rewind_to may take back (>= max_block)
};

// One sequence's attention state, allocated and owned by the backend that
// computes with it: per layer the raw window ring, the compressed rows, the
// indexer rows and the compressor rings (buffers in the backend's memory), plus
// host-side counts that follow from the positions stored, so the model code never
// reads the buffers.
//
// Rewind: the rings are indexed by position and hold max_rewind positions more
// than any later step reads, so taking back up to max_rewind positions (counted
// from the highest position ever stored) only moves the position and drops the
// compressed and indexer rows appended past it: no copy, whatever the context.
// A sequence state copied to the host, for snapshot files: the positions and the
// backend's arrays in a fixed order (per layer: window ring, compressed rows, indexer
// rows, compressor rings), each as float32 values. Backend::seq_state_from_image
// rebuilds the state on any backend whose state has the same shape.
struct SeqStateImage {
    int64_t pos = 0, hwm = 0;
    std::vector<std::vector<float>> arrays;
};

class SeqState {
public:
    // ArgumentError for a shape no backend can hold (max_block < 1, max_rewind < max_block).
    explicit SeqState(const SeqShape& shape);
    virtual ~SeqState() = default;
    const SeqShape& shape() const { return shape_; }
    // Window ring slots: the window plus every position a rewind may take back (position p
    // in slot p % window_slots()), the same on every backend.
    int64_t window_slots() const { return shape_.n_swa + shape_.max_rewind - 1; }

    // Host-side bookkeeping, the same for every backend.
    int64_t pos() const { return pos_; }  // positions stored (the next token's position)
    int64_t high_water() const { return hwm_; }  // highest position + 1 ever stored
    // The lowest position rewind_to accepts: no ring slot a position at or above it
    // needs has been overwritten since (every write lies below it + max_rewind).
    int64_t rewind_floor() const { return hwm_ > shape_.max_rewind ? hwm_ - shape_.max_rewind : 0; }
    // The block at pos() .. pos() + n - 1 has been stored in every layer.
    void commit(int64_t n) {
        pos_ += n;
        if (pos_ > hwm_) hwm_ = pos_;
    }
    // Back to position p (rewind_floor() <= p <= pos(); ArgumentError otherwise): the
    // compressed and indexer rows past it are dropped; the rings need nothing.
    void rewind_to(int64_t p);

    virtual int64_t bytes() const = 0;  // memory held now
    // A deep copy on the same backend: a snapshot to restore later.
    virtual std::unique_ptr<SeqState> clone() const = 0;
    // The state's arrays on the host (a snapshot file's payload).
    virtual SeqStateImage to_image() const = 0;

protected:
    // For a state rebuilt from an image: the positions it covers.
    void set_positions(int64_t pos, int64_t hwm) {
        pos_ = pos;
        hwm_ = hwm;
    }
    // Release what was stored past position p (rows are counted from positions anyway).
    virtual void drop_after(int64_t p) = 0;

private:
    SeqShape shape_;
    int64_t pos_ = 0;
    int64_t hwm_ = 0;  // highest position + 1 ever stored (rewinds do not lower it)
};

// What a compressor needs besides its state (one per layer and kind).
struct CompressorParams {
    const WeightView* ape = nullptr;   // [ratio rows] positional bias of the scores
    const WeightView* norm = nullptr;  // RMS-norm weight of a pooled row
    const RopeSpec* rope = nullptr;    // applied at the window's first position
    int64_t row_dim = 0;               // Dc: length of a pooled row
    int64_t n_rot = 0;
    double rms_eps = 1e-6;
    bool indexer = false;              // indexer rows: Hadamard (+ FP4); else KV rows: FP8 (if fp8_kv)
    bool fp8_kv = true;
    bool indexer_fp4 = true;
};

// Which compressed rows token i (position p = p0 + i) of an attention block sees.
// visible(p) = (p + 1) / ratio rows exist once its compressor step ran. Without a
// selection it sees rows 0 .. visible - 1; with one (indexer_select's output,
// top_k per token) it sees selected[i * top_k ..] of them, min(visible, top_k) rows.
struct CompRowView {
    int64_t ratio = 0;               // 0: the layer has no compressed rows
    Dev<const int32_t> selected;     // null: every visible row
    int64_t top_k = 0;
};

// One matrix of Backend::matmul_shared_x and where its rows go.
struct MatmulOut {
    const WeightView* W;
    Dev<float> Y;
    int64_t ldy;
};

// How a layer's tokens pick experts (ds4-model.md section 3, MoE).
struct RouteParams {
    int64_t n_expert = 0, n_used = 0;
    const WeightView* hash_table = nullptr;  // [n_used, V] I32: hash layers take tid2eid[token]
    const WeightView* bias = nullptr;        // [n_expert]: selection bias of the other layers
    bool normalise = true;                   // weights / max(sum of selected, floor)
    double scale = 1.0;                      // expert_weights_scale
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;  // e.g. "cpu(avx512)", "cuda(NVIDIA H200)"
    virtual std::string kind() const = 0;  // "cpu", "cuda" or "hip"
    virtual int n_threads() const = 0;

    // ---- Memory ----
    virtual std::unique_ptr<DeviceBuffer> alloc(size_t bytes) = 0;
    // Host -> backend and backend -> host copies, ordered with the operations; a
    // download's bytes are in `dst` once synchronize() returns.
    virtual void upload(void* dst, const void* src, size_t bytes) = 0;
    virtual void download(void* dst, const void* src, size_t bytes) = 0;
    virtual void synchronize() = 0;
    template <class T>
    void upload(Dev<T> dst, const T* src, int64_t n) {
        upload((void*)dst.get(), src, (size_t)n * sizeof(T));
    }
    template <class T>
    void download(T* dst, Dev<const T> src, int64_t n) {
        download(dst, (const void*)src.get(), (size_t)n * sizeof(T));
    }

    // Called once per model before any compute: the backend copies or maps every
    // view of the table (device copies of the matrices, float copies of small
    // vectors) and resolves later WeightViews by their id.
    virtual void bind_weights(const WeightTable& table) = 0;
    // True when bind_weights copies every view into memory of the backend's own (a GPU), so
    // compute never reads the host mapping again and the model may drop its pages.
    virtual bool holds_weight_copies() const { return false; }

    // ---- Dense operations ----
    // X[i * n_copies + h][0..E) = table.row(tokens[i]) for h < n_copies (E = table.n_in()).
    virtual void embed(const WeightView& table, Dev<const int32_t> tokens, int64_t n, int64_t n_copies,
                       Dev<float> X) = 0;

    // Y[c*ldy + r] = W.row(row0 + r) . X[c*ldx .. c*ldx + W.n_in()) for r < n_rows, c < ncols.
    virtual void matmul(const WeightView& W, int64_t row0, int64_t n_rows, Dev<const float> X, int64_t ldx,
                        int ncols, Dev<float> Y, int64_t ldy) = 0;

    // Grouped matmul: for g < n_groups, rows g*group_rows .. + group_rows of W times their own
    // slice of each column, Y[c*ldy + g*group_rows + r] = W.row(g*group_rows + r) .
    // X[c*ldx + g*x_stride .. + W.n_in()) (DS4's grouped output projection). The same bits as
    // the n_groups matmul calls, which the default makes; a backend may do it in one pass.
    virtual void matmul_grouped(const WeightView& W, int64_t n_groups, int64_t group_rows, Dev<const float> X,
                                int64_t x_stride, int64_t ldx, int ncols, Dev<float> Y, int64_t ldy) {
        for (int64_t g = 0; g < n_groups; ++g) {
            matmul(W, g * group_rows, group_rows, X + g * x_stride, ldx, ncols, Y + g * group_rows, ldy);
        }
    }

    // Several matrices over the same columns: for each out, out.Y[c*out.ldy + r] = out.W->row(r) .
    // X[c*ldx .. + W.n_in()) for every row r of W. The bits of one matmul call per matrix, which
    // the default makes; a backend may compute them in one pass (the GPU: the matrices of one
    // type in one launch; a step projects its attention input through 2 to 6 small matrices).
    virtual void matmul_shared_x(const std::vector<MatmulOut>& outs, Dev<const float> X, int64_t ldx, int ncols) {
        for (const MatmulOut& o : outs) matmul(*o.W, 0, o.W->n_rows(), X, ldx, ncols, o.Y, o.ldy);
    }

    // A promise about the next rms_norm or hc_pre_norm call: its output is what the backend call
    // right after it multiplies by W (matmul or matmul_shared_x with W among its matrices, the
    // norm's rows as its columns), and nothing writes that output in between. A backend may
    // prepare the columns in the norm: the GPU writes the int8 columns of a Q8_0 matmul on int8
    // columns there, where a launch of their own had quantised them. Changes no bit; the default
    // ignores it.
    virtual void norm_feeds(const WeightView& W) { (void)W; }

    // y_r = x_r / sqrt(mean(x_r^2) + eps) * w (w == nullptr: unweighted), for n_rows rows of n.
    virtual void rms_norm(Dev<const float> x, const WeightView* w, int64_t n, int64_t n_rows, double eps,
                          Dev<float> y) = 0;

    // x[k] = (float)(x[k] * s) for k < n.
    virtual void scale(Dev<float> x, int64_t n, double s) = 0;

    // y[k] = y[k] + x[k] for k < n (one float addition each).
    virtual void add(Dev<float> y, Dev<const float> x, int64_t n) = 0;

    // Per row r of x ([n_rows][n]): ids[r * k + j] and vals[r * k + j] for j < k, the row's k
    // largest values, largest first, an equal value at the lower index first, NaN last
    // (core/top_k.h). 1 <= k <= min(n, kMaxRowTopK). Greedy decoding reads one id per token
    // instead of the row (a GPU's logits stay on the device).
    virtual void row_top_k(Dev<const float> x, int64_t n_rows, int64_t n, int64_t k, Dev<int32_t> ids,
                           Dev<float> vals) = 0;

    // dst[k] = src[k] for k < n (the regions do not overlap).
    virtual void copy(Dev<float> dst, Dev<const float> src, int64_t n) = 0;
    // The same for token ids (a greedy chain feeds row_top_k's id to the next step's embed
    // without the host: Ds4Session::decode_greedy).
    virtual void copy_ids(Dev<int32_t> dst, Dev<const int32_t> src, int64_t n) = 0;

    // Token i of n_tokens holds rows_per_token rows of row_len values at x + i*rows_per_token*row_len;
    // rotates adjacent pairs of the last spec.n_rot dims of each row by the angle at pos0 + i (or its inverse).
    virtual void rope_tail(Dev<float> x, int64_t n_tokens, int64_t rows_per_token, int64_t row_len, int64_t pos0,
                           const RopeSpec& spec, bool inverse) = 0;

    // D's FP8-E4M3 round trip of the first n - n_rot values of each of n_rows rows (blocks of 64).
    virtual void fp8_kv_round_trip(Dev<float> x, int64_t n_rows, int64_t n, int64_t n_rot) = 0;

    // Indexer transform of each row of d values: Hadamard / sqrt(d), then optionally FP4 per 32.
    virtual void indexer_transform(Dev<float> x, int64_t n_rows, int64_t d, bool fp4) = 0;

    // ---- Hyper-connections ----
    // HC-pre of n_tokens tokens (X: [n_tokens][n_hc][E]): x = N(flatten X); m = fn . x;
    // split (Sinkhorn, scale [3], base [n_mix]) into split[i * hc_split_size(n_hc) ..];
    // u_i = sum_h pre_h X_h.
    virtual void hc_pre(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                        const WeightView& scale, const WeightView& base, int64_t sinkhorn_iters, double hc_eps,
                        double rms_eps, Dev<float> u, Dev<double> split) = 0;

    // hc_pre, then u = rms_norm(u, &norm, E, n_tokens, rms_eps): what both sublayers of a block
    // begin with. An override (the GPU's one kernel for the collapse and the norm) must give
    // these two calls' bits.
    virtual void hc_pre_norm(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                             const WeightView& scale, const WeightView& base, int64_t sinkhorn_iters, double hc_eps,
                             double rms_eps, const WeightView& norm, Dev<float> u, Dev<double> split) {
        hc_pre(X, n_tokens, n_hc, E, fn, scale, base, sinkhorn_iters, hc_eps, rms_eps, u, split);
        rms_norm(u, &norm, E, n_tokens, rms_eps, u);
    }

    // HC-post of n_tokens tokens: X_out_j = post_j * y + sum_r M[r][j] X_r (X_out may not alias X).
    virtual void hc_post(Dev<const float> y, Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E,
                         Dev<const double> split, Dev<float> X_out) = 0;

    // Output head collapse of n_tokens tokens: x = N(flatten X);
    // w_h = sigmoid(fn_h . x * scale[0] + base_h) + eps; e = sum w_h X_h.
    virtual void hc_head(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                         const WeightView& scale, const WeightView& base, double hc_eps, double rms_eps,
                         Dev<float> e) = 0;

    // Mean of the n_hc streams of n_tokens tokens: out[i * ldo + k] = (sum_h X_i,h[k]) / n_hc
    // (summed in h order in double). Layer capture for a drafter's features.
    virtual void hc_mean(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, Dev<float> out,
                         int64_t ldo) = 0;

    // ---- Mixture of experts ----
    // Expert choice of n tokens from their gate logits ([n][n_expert]): s = sqrt(softplus(logit));
    // hash layers take tid2eid[token], the others the top n_used of s + bias (ties: lower id first);
    // weights[i*n_used + k] = s_e / max(sum_k s, 6.1035e-5) (if normalise) * scale.
    virtual void route(Dev<const float> logits, Dev<const int32_t> tokens, int64_t n, const RouteParams& rp,
                       Dev<int32_t> experts, Dev<float> weights) = 0;

    // Routed experts plus the shared expert of n_tokens tokens (h: [n_tokens][E]):
    // y_i = sum_k weights[i*K+k] * down_e(swiglu(gate_e h_i, up_e h_i)) + down_sh(swiglu(...)),
    // e = experts[i*K+k]. Each y_i is bitwise independent of the other tokens: tokens may
    // share an expert's matmul as columns, and y_i accumulates in k order, shared expert last.
    virtual void moe(const MoeWeights& mw, Dev<const float> h, int64_t n_tokens, Dev<const int32_t> experts,
                     Dev<const float> weights, int64_t n_used, double clamp, double clamp_shared, Dev<float> y) = 0;

    // ---- Step graphs (optional: a backend may record a step once and replay it) ----
    // A forward step: n tokens at p0.. of `st`, whose calls the caller issues between
    // begin_step and end_step. `key` names everything the calls depend on besides positions
    // and the state (the caller's buffers, its branches); two steps with one key, n and state
    // differ only in positions. begin_step returns true when it replayed a recorded step for
    // the key at p0 (the caller then issues none of the calls, only its own bookkeeping);
    // false: the caller issues them, then end_step(ok) (ok false on an exception: a recording is
    // dropped). Steps replay bitwise what their calls compute. The default records nothing.
    virtual bool begin_step(SeqState& /*st*/, int64_t /*p0*/, int64_t /*n*/, const std::vector<int64_t>& /*key*/) {
        return false;
    }
    virtual void end_step(bool /*ok*/) {}
    // Counts a backend keeps about itself, by name (the GPU's: steps issued, recorded, replayed).
    virtual std::vector<std::pair<std::string, int64_t>> counters() const { return {}; }

    // ---- Sequence state ----
    virtual std::unique_ptr<SeqState> new_seq_state(const SeqShape& shape) = 0;
    // A state of this shape holding an image's arrays (ArgumentError naming the array whose
    // length does not fit the shape, or positions that do not).
    virtual std::unique_ptr<SeqState> seq_state_from_image(const SeqShape& shape, const SeqStateImage& image) = 0;

    // Stores the KV rows (already rotated and rounded) of n tokens at positions p0 ..
    // of layer il in its window ring, as F16. At most shape.max_block tokens per block.
    virtual void kv_store(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> kv) = 0;

    // A causal step's attention inputs, once projected, for n tokens at p0.. of layer il: every
    // query head (Q: [n][n_head][D]) RMS-normalised without a weight and the KV row (kv: [n][D])
    // with kv_norm, both rotated at their positions (rope_tail), the KV row FP8-rounded before
    // its last fp8_n_rot values (if fp8_kv) and stored (kv_store). The default makes those six
    // calls; an override (the GPU's one kernel) must give their bits.
    virtual void attention_inputs(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<float> Q, int64_t n_head,
                                  Dev<float> kv, const WeightView& kv_norm, int64_t D, double rms_eps,
                                  const RopeSpec& rope, bool fp8_kv, int64_t fp8_n_rot) {
        rms_norm(Q, nullptr, D, n * n_head, rms_eps, Q);
        rms_norm(kv, &kv_norm, D, n, rms_eps, kv);
        rope_tail(Q, n, n_head, D, p0, rope, false);
        rope_tail(kv, n, 1, D, p0, rope, false);
        if (fp8_kv) fp8_kv_round_trip(kv, n, D, fp8_n_rot);
        kv_store(st, il, p0, n, kv);
    }

    // Runs the layer's KV compressor (or, indexer, its indexer compressor) over n tokens at
    // p0.. in order: token i puts kappa_i and score_i = gate_i + ape[(p0+i) % ratio] in its
    // ring slot; when p0+i+1 is a multiple of the ratio the window is pooled (softmax over
    // the scores), normalised, rotated at the window's first position, rounded (FP8 / Hadamard
    // + FP4) and appended as a row.
    virtual void compress(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> kappa,
                          Dev<const float> gate, int64_t ld, const CompressorParams& cp) = 0;

    // Indexer top-k for n tokens at p0..: score_c = sum_h w_h ReLU(q_h . row_c) over the
    // (p+1)/4 indexer rows token i sees (q: [n][n_head][d], transformed; w: [n][n_head],
    // scaled); selected[i * top_k ..] gets the top_k best in ascending order (ties: lower row
    // first), or all visible rows when there are at most top_k.
    virtual void indexer_select(const SeqState& st, int64_t il, int64_t p0, Dev<const float> q, Dev<const float> w,
                                int64_t n, int64_t n_head, int64_t d, int64_t top_k, Dev<int32_t> selected) = 0;

    // Attention of n tokens at p0.. (Q, O: [n][n_head][D]). Token i attends to the raw window
    // rows max(0, p - n_swa + 1)..p of layer il (p = p0 + i), then its compressed rows
    // (V = K; they may overlap the window). Per head: s = Q_h.K / sqrt(D); softmax whose
    // denominator adds exp(sink_h); O_h = sum w K, then rotated back (inverse RoPE at p).
    virtual void attention(const SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> Q,
                           int64_t n_head, int64_t D, const CompRowView& comp, const WeightView& sinks,
                           const RopeSpec& rope, Dev<float> O) = 0;

    // Bidirectional attention over given rows (the DSpark drafter, ds4-model.md section 6):
    // each of n query tokens (Q, O: [n][n_head][D]; token i at position pos0 + i) attends to
    // all T rows of K ([T][D], V = K, already rotated), no mask and no sequence state. Per
    // head: s = Q_h.K / sqrt(D); softmax whose denominator adds exp(sink_h); O_h = sum w K,
    // then rotated back (inverse RoPE at pos0 + i). Same reductions as attention().
    virtual void attention_rows(Dev<const float> Q, int64_t n, int64_t n_head, int64_t D, Dev<const float> K,
                                int64_t T, const WeightView& sinks, const RopeSpec& rope, int64_t pos0,
                                Dev<float> O) = 0;
};

// Backends by name: "cpu", "cuda", "hip", or "auto" (the GPU backend this build has,
// if a device is present, else the CPU). threads <= 0: every hardware thread (CPU).
// A backend that was not built in throws UnsupportedError naming the build switch.
std::unique_ptr<Backend> make_backend(const std::string& name, int threads);

// Every backend name with "ok" or why this build or machine cannot run it.
std::vector<std::pair<std::string, std::string>> available_backends();

// A GPU's memory bandwidth as `bench engine` divides by: a read kernel and a copy kernel (its
// bytes counted twice, as STREAM does) over arrays of at least array_bytes and 8x the L2, best
// of `passes` after a warm-up. kind: "cuda" or "hip", the GPU backend this build has (else
// UnsupportedError, as make_backend).
struct DeviceLimits {
    std::string device, arch;
    int multiprocessors = 0;
    uint64_t l2_bytes = 0, total_bytes = 0, array_bytes = 0;
    int passes = 0;
    double read_bytes_per_s = 0.0, copy_bytes_per_s = 0.0;
};
DeviceLimits measure_device_limits(const std::string& kind, uint64_t array_bytes, int passes);

}  // namespace ds4
