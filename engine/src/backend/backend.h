// The small interface the DeepSeek V4 model code computes through. The CPU
// backend (backend/cpu) implements it now; the CUDA/HIP backend implements the
// same calls later.
//
// Invariance contract (what makes verify == decode bitwise, ds4kit principle 1):
//   - matmul over ncols columns gives each column exactly the bits it gets with
//     ncols = 1 (quant dot_row_cols), whatever the thread count: work is split
//     over output rows, never over a reduction.
//   - every other call works on one token (one column) at a time, with a fixed
//     reduction order.
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

// Hyper-connection split of one sublayer for one token.
struct HcSplit {
    std::vector<double> pre;   // [n_hc] weights of the sublayer input
    std::vector<double> post;  // [n_hc] gates of the sublayer output
    std::vector<double> comb;  // [n_hc * n_hc], comb[r * n_hc + c] = M[r][c] after Sinkhorn
};

// Keys of one attention call: pointers to F16 rows of head_dim values
// (raw window rows, then the selected compressed rows; V = K).
struct KeyRows {
    std::vector<const uint16_t*> rows;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    virtual int n_threads() const = 0;

    // Y[c*ldy + r] = W.row(row0 + r) . X[c*ldx .. c*ldx + W.n_in()) for r < n_rows, c < ncols.
    virtual void matmul(const WeightView& W, int64_t row0, int64_t n_rows, const float* X, int64_t ldx, int ncols,
                        float* Y, int64_t ldy) = 0;

    // y_r = x_r / sqrt(mean(x_r^2) + eps) * w (w == nullptr: unweighted), for n_rows rows of n.
    virtual void rms_norm(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y) = 0;

    // Rotates adjacent pairs of the last spec.n_rot dims of each row by the angle at pos (or its inverse).
    virtual void rope_tail(float* x, int64_t n_rows, int64_t row_len, double pos, const RopeSpec& spec,
                           bool inverse) = 0;

    // D's FP8-E4M3 round trip of the first n - n_rot values (blocks of 64, power-of-two scale).
    virtual void fp8_kv_round_trip(float* x, int64_t n, int64_t n_rot) = 0;

    // Indexer transform of each row of d values: Hadamard / sqrt(d), then optionally FP4 per 32.
    virtual void indexer_transform(float* x, int64_t n_rows, int64_t d, bool fp4) = 0;

    // HC-pre: x = N(flatten X); m = fn . x; split (Sinkhorn); u = sum_h pre_h X_h.
    virtual void hc_pre(const float* X, int64_t n_hc, int64_t E, const WeightView& fn, const float* scale,
                        const float* base, int64_t sinkhorn_iters, double hc_eps, double rms_eps, float* u,
                        HcSplit& split) = 0;

    // HC-post: X_out_j = post_j * y + sum_r M[r][j] X_r.
    virtual void hc_post(const float* y, const float* X, int64_t n_hc, int64_t E, const HcSplit& split,
                         float* X_out) = 0;

    // Output head collapse: x = N(flatten X); w_h = sigmoid(fn_h . x * scale0 + base_h) + eps; e = sum w_h X_h.
    virtual void hc_head(const float* X, int64_t n_hc, int64_t E, const WeightView& fn, float scale0,
                         const float* base, double hc_eps, double rms_eps, float* e) = 0;

    // Compressor pooling over the state [rows, width] (kv and score alike):
    // ratio 4: column j < Dc pools rows 0..3 at column j and rows 4..7 at column Dc + j;
    // otherwise rows 0..ratio-1 at column j. pooled_j = sum_t softmax_t(score) kv.
    virtual void compressor_pool(const float* kv, const float* score, int64_t width, int64_t ratio, int64_t Dc,
                                 float* pooled) = 0;

    // score_c = sum_h w_h ReLU(q_h . k_c) for n_rows F16 indexer rows of d values.
    virtual void indexer_scores(const float* q, const float* w, int64_t n_head, int64_t d, const uint16_t* rows,
                                int64_t n_rows, double* scores) = 0;

    // Attention with a per-head sink: s = Q_h.K / sqrt(D); softmax whose
    // denominator adds exp(sink_h); O_h = sum w K.
    virtual void attention(const float* Q, int64_t n_head, int64_t D, const KeyRows& keys, const float* sinks,
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

}  // namespace ds4
