// The CPU backend's class, shared by its source files (one job each):
//   cpu_backend.cpp   matmul, norms, RoPE, roundings, the factory
//   cpu_hc.cpp        hyper-connection pre / post / head
//   cpu_seq_state.cpp the sequence state: window ring, compressors, stored rows
//   cpu_attention.cpp attention and indexer selection over that state
//   cpu_moe.cpp       routed and shared experts
// Work is split over the thread pool by independent outputs only (rows of a
// matmul, tokens, head groups), so no value depends on the thread count.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

namespace ds4 {

// Single-row helpers the files share (no threading inside).
void cpu_rms_norm_row(const float* x, const float* w, int64_t n, double eps, float* y);
// cs[2i], cs[2i + 1] = cos, sin of RoPE pair i's angle at pos (n_rot values): computed
// once per position, shared by every row rotated there.
void cpu_rope_cos_sin(double pos, const RopeSpec& spec, double* cs);
void cpu_rope_row(float* x, int64_t row_len, const double* cs, int64_t n_rot, bool inverse);
void cpu_indexer_transform_row(float* row, int64_t d, bool fp4, std::vector<double>& tmp);
double cpu_sigmoid(double x);

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(int threads) : pool_(threads) {}

    std::string name() const override;
    std::string kind() const override { return "cpu"; }
    int n_threads() const override { return pool_.size(); }
    void bind_weights(const Ds4Weights&) override {}  // the mapping is used in place

    void matmul(const WeightView& W, int64_t row0, int64_t n_rows, const float* X, int64_t ldx, int ncols, float* Y,
                int64_t ldy) override;
    void rms_norm(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y) override;
    void rope_tail(float* x, int64_t n_tokens, int64_t rows_per_token, int64_t row_len, int64_t pos0,
                   const RopeSpec& spec, bool inverse) override;
    void fp8_kv_round_trip(float* x, int64_t n_rows, int64_t n, int64_t n_rot) override;
    void indexer_transform(float* x, int64_t n_rows, int64_t d, bool fp4) override;

    void hc_pre(const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn, const float* scale,
                const float* base, int64_t iters, double hc_eps, double rms_eps, float* u, double* split) override;
    void hc_post(const float* y, const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, const double* split,
                 float* X_out) override;
    void hc_head(const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn, float scale0,
                 const float* base, double hc_eps, double rms_eps, float* e) override;

    std::unique_ptr<SeqState> new_seq_state(const SeqShape& shape) override;
    void kv_store(SeqState& st, int64_t il, int64_t p0, int64_t n, const float* kv) override;
    void compress(SeqState& st, int64_t il, int64_t p0, int64_t n, const float* kappa, const float* gate, int64_t ld,
                  const CompressorParams& cp, int64_t* rows_after) override;
    void indexer_select(const SeqState& st, int64_t il, const float* q, const float* w, int64_t n, int64_t n_head,
                        int64_t d, const int64_t* visible, int64_t top_k, int32_t* selected,
                        int64_t* n_selected) override;
    void attention(const SeqState& st, int64_t il, int64_t p0, int64_t n, const float* Q, int64_t n_head, int64_t D,
                   const CompRowSelection& comp, const float* sinks, const RopeSpec& rope, float* O) override;

    void moe(const Ds4LayerWeights& lw, const float* h, int64_t n_tokens, const int32_t* experts,
             const float* weights, int64_t n_used, double clamp, double clamp_shared, float* y) override;

    // Per-call scratch of the calling thread (pool workers have their own), reused:
    // it grows to the largest call, then stays (no allocation per token). Thread-local,
    // not members, because two sessions of one model may run concurrently from Python
    // threads (the bindings release the GIL).
    struct Scratch {
        std::vector<double> d0, d1, d2, rope_cs;
        std::vector<float> f0, f1;
        std::vector<const float*> rows;
        std::vector<int32_t> order;
    };
    static Scratch& scratch() {
        thread_local Scratch s;
        return s;
    }

private:
    // HC mix logits of n_tokens tokens (fn . N(flatten X)), in the caller's scratch.
    const float* hc_mix(const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                        double rms_eps);

    ThreadPool pool_;
};

}  // namespace ds4
