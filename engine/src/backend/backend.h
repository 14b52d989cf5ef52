// The small interface the DeepSeek V4 model code computes through. The CPU
// backend (backend/cpu) implements it now; the CUDA/HIP backend implements the
// same calls later.
//
// Invariance contract (what makes verify == decode bitwise, ds4kit principle 1):
//   - matmul over ncols columns gives each column exactly the bits it gets with
//     ncols = 1 (quant dot_row_cols), whatever the thread count: work is split
//     over output rows, never over a reduction.
//   - every other call treats each token (column) on its own, with a fixed
//     reduction order; calls over several tokens may split the tokens across
//     threads, never a reduction.
// Numerics: activations are float32; norms, softmaxes, Sinkhorn, RoPE angles,
// attention and pooling reduce in double (the oracle is float64 numpy).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/ds4_weights.h"

namespace ds4 {

// RoPE of one layer kind: plain (ext_factor 0) or YaRN (ext_factor 1,
// freq_scale = 1/factor); the YaRN magnitude factor cancels (net scale 1).
struct RopeSpec {
    int64_t n_rot = 0;
    double freq_base = 10000.0;
    double freq_scale = 1.0;
    double ext_factor = 0.0;
    int64_t n_ctx_orig = 0;
    double beta_fast = 32.0;
    double beta_slow = 1.0;
};

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
};

// One sequence's attention state, allocated and owned by the backend that
// computes with it (host memory on the CPU, device memory on a GPU): per layer
// the raw window ring, the compressed rows, the indexer rows and the rolling
// compressor windows. The model code only sees counts.
class SeqState {
public:
    virtual ~SeqState() = default;
    virtual int64_t n_comp(int64_t il) const = 0;  // compressed rows stored in layer il
    virtual int64_t n_idx(int64_t il) const = 0;   // indexer rows stored in layer il
    virtual int64_t bytes() const = 0;             // memory held now
    // A deep copy on the same backend: a snapshot to restore later (prefix reuse,
    // rewinding rejected draft tokens).
    virtual std::unique_ptr<SeqState> clone() const = 0;
};

// What a compressor needs besides its state (one per layer and kind).
struct CompressorParams {
    const WeightView* ape = nullptr;  // [ratio rows] positional bias of the scores
    const float* norm = nullptr;      // RMS-norm weight of a pooled row
    const RopeSpec* rope = nullptr;   // applied at the window's first position
    int64_t row_dim = 0;              // Dc: length of a pooled row
    int64_t n_rot = 0;
    double rms_eps = 1e-6;
    bool indexer = false;             // indexer rows: Hadamard (+ FP4); else KV rows: FP8 (if fp8_kv)
    bool fp8_kv = true;
    bool indexer_fp4 = true;
};

// Which compressed rows token i of an attention block sees: rows[i * stride ..
// + count[i]), or, when rows is null, rows 0 .. count[i] - 1.
struct CompRowSelection {
    const int32_t* rows = nullptr;
    int64_t stride = 0;
    const int64_t* count = nullptr;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;  // e.g. "cpu(avx512)", "cuda(NVIDIA H200)"
    virtual std::string kind() const = 0;  // "cpu", "cuda" or "hip"
    virtual int n_threads() const = 0;

    // Called once per model before any compute: a backend that keeps weights
    // elsewhere (device memory) copies them here and resolves later WeightViews
    // to its copies. The CPU backend computes on the memory mapping in place.
    virtual void bind_weights(const Ds4Weights& w) = 0;

    // Y[c*ldy + r] = W.row(row0 + r) . X[c*ldx .. c*ldx + W.n_in()) for r < n_rows, c < ncols.
    virtual void matmul(const WeightView& W, int64_t row0, int64_t n_rows, const float* X, int64_t ldx, int ncols,
                        float* Y, int64_t ldy) = 0;

    // y_r = x_r / sqrt(mean(x_r^2) + eps) * w (w == nullptr: unweighted), for n_rows rows of n.
    virtual void rms_norm(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y) = 0;

    // Token i of n_tokens holds rows_per_token rows of row_len values at x + i*rows_per_token*row_len;
    // rotates adjacent pairs of the last spec.n_rot dims of each row by the angle at pos0 + i (or its inverse).
    virtual void rope_tail(float* x, int64_t n_tokens, int64_t rows_per_token, int64_t row_len, int64_t pos0,
                           const RopeSpec& spec, bool inverse) = 0;

    // D's FP8-E4M3 round trip of the first n - n_rot values of each of n_rows rows (blocks of 64).
    virtual void fp8_kv_round_trip(float* x, int64_t n_rows, int64_t n, int64_t n_rot) = 0;

    // Indexer transform of each row of d values: Hadamard / sqrt(d), then optionally FP4 per 32.
    virtual void indexer_transform(float* x, int64_t n_rows, int64_t d, bool fp4) = 0;

    // HC-pre of n_tokens tokens (X: [n_tokens][n_hc][E]): x = N(flatten X); m = fn . x;
    // split (Sinkhorn) into split[i * hc_split_size(n_hc) ..]; u_i = sum_h pre_h X_h.
    virtual void hc_pre(const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                        const float* scale, const float* base, int64_t sinkhorn_iters, double hc_eps, double rms_eps,
                        float* u, double* split) = 0;

    // HC-post of n_tokens tokens: X_out_j = post_j * y + sum_r M[r][j] X_r (X_out may not alias X).
    virtual void hc_post(const float* y, const float* X, int64_t n_tokens, int64_t n_hc, int64_t E,
                         const double* split, float* X_out) = 0;

    // Output head collapse of n_tokens tokens: x = N(flatten X); w_h = sigmoid(fn_h . x * scale0 + base_h) + eps;
    // e = sum w_h X_h.
    virtual void hc_head(const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                         float scale0, const float* base, double hc_eps, double rms_eps, float* e) = 0;

    // ---- Sequence state ----
    virtual std::unique_ptr<SeqState> new_seq_state(const SeqShape& shape) = 0;

    // Stores the KV rows (already rotated and rounded) of n tokens at positions p0.. of
    // layer il in its window ring, as F16. At most shape.max_block tokens per block.
    virtual void kv_store(SeqState& st, int64_t il, int64_t p0, int64_t n, const float* kv) = 0;

    // Runs the layer's KV compressor (or, indexer, its indexer compressor) over n tokens at
    // p0.. in order: token i puts kappa_i and score_i = gate_i + ape[(p0+i) % ratio] in its
    // window slot; when p0+i+1 is a multiple of the ratio the window is pooled (softmax over
    // the scores), normalised, rotated at the window's first position, rounded (FP8 / Hadamard
    // + FP4) and appended as a row. rows_after[i] = rows stored once token i is done.
    virtual void compress(SeqState& st, int64_t il, int64_t p0, int64_t n, const float* kappa, const float* gate,
                          int64_t ld, const CompressorParams& cp, int64_t* rows_after) = 0;

    // Indexer top-k for n tokens: score_c = sum_h w_h ReLU(q_h . row_c) over the indexer rows
    // c < visible[i] of token i (q: [n][n_head][d], transformed; w: [n][n_head], scaled);
    // selected[i * top_k ..] gets the top_k best rows in ascending order (ties: lower row
    // first), or all visible rows when there are at most top_k; n_selected[i] their count.
    virtual void indexer_select(const SeqState& st, int64_t il, const float* q, const float* w, int64_t n,
                                int64_t n_head, int64_t d, const int64_t* visible, int64_t top_k,
                                int32_t* selected, int64_t* n_selected) = 0;

    // Attention of n tokens at p0.. (Q, O: [n][n_head][D]). Token i attends to the raw window
    // rows max(0, p - n_swa + 1)..p of layer il (p = p0 + i), then its compressed rows
    // (V = K; they may overlap the window). Per head: s = Q_h.K / sqrt(D); softmax whose
    // denominator adds exp(sink_h); O_h = sum w K, then rotated back (inverse RoPE at p).
    virtual void attention(const SeqState& st, int64_t il, int64_t p0, int64_t n, const float* Q, int64_t n_head,
                           int64_t D, const CompRowSelection& comp, const float* sinks, const RopeSpec& rope,
                           float* O) = 0;

    // Routed experts plus the shared expert of n_tokens tokens (h: [n_tokens][E]):
    // y_i = sum_k weights[i*K+k] * down_e(swiglu(gate_e h_i, up_e h_i)) + down_sh(swiglu(...)),
    // e = experts[i*K+k]. Each y_i is bitwise independent of the other tokens: tokens may
    // share an expert's matmul as columns, and y_i accumulates in k order, shared expert last.
    virtual void moe(const Ds4LayerWeights& lw, const float* h, int64_t n_tokens, const int32_t* experts,
                     const float* weights, int64_t n_used, double clamp, double clamp_shared, float* y) = 0;
};

// CPU backend; threads <= 0 means the hardware concurrency.
std::unique_ptr<Backend> make_cpu_backend(int threads);

// Backends by name: "cpu", "cuda", "hip", or "auto" (the GPU backend this build has,
// if a device is present, else the CPU). threads <= 0: every hardware thread (CPU).
// A backend that was not built in throws UnsupportedError naming the build switch.
std::unique_ptr<Backend> make_backend(const std::string& name, int threads);

// Every backend name with "ok" or why this build or machine cannot run it.
std::vector<std::pair<std::string, std::string>> available_backends();

}  // namespace ds4
