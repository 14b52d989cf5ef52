// The CPU backend's class, shared by its source files (one job each):
//   cpu_backend.cpp   memory, weights, matmul, norms, RoPE, roundings, the factory
//   cpu_route.cpp     expert choice (router top-k, hash layers, weight normalisation)
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

    // Host memory: operations run to completion, so upload/download are plain copies.
    std::unique_ptr<DeviceBuffer> alloc(size_t bytes) override;
    void upload(void* dst, const void* src, size_t bytes) override;
    void download(void* dst, const void* src, size_t bytes) override;
    void synchronize() override {}
    using Backend::download;
    using Backend::upload;

    // Matrices are used in place in the mapping; small vectors become floats here.
    void bind_weights(const WeightTable& table) override;

    void embed(const WeightView& table, Dev<const int32_t> tokens, int64_t n, int64_t n_copies,
               Dev<float> X) override;
    void matmul(const WeightView& W, int64_t row0, int64_t n_rows, Dev<const float> X, int64_t ldx, int ncols,
                Dev<float> Y, int64_t ldy) override;
    void rms_norm(Dev<const float> x, const WeightView* w, int64_t n, int64_t n_rows, double eps,
                  Dev<float> y) override;
    void scale(Dev<float> x, int64_t n, double s) override;
    void add(Dev<float> y, Dev<const float> x, int64_t n) override;
    void copy(Dev<float> dst, Dev<const float> src, int64_t n) override;
    void copy_ids(Dev<int32_t> dst, Dev<const int32_t> src, int64_t n) override;
    void row_top_k(Dev<const float> x, int64_t n_rows, int64_t n, int64_t k, Dev<int32_t> ids,
                   Dev<float> vals) override;
    void rope_tail(Dev<float> x, int64_t n_tokens, int64_t rows_per_token, int64_t row_len, int64_t pos0,
                   const RopeSpec& spec, bool inverse) override;
    void fp8_kv_round_trip(Dev<float> x, int64_t n_rows, int64_t n, int64_t n_rot) override;
    void indexer_transform(Dev<float> x, int64_t n_rows, int64_t d, bool fp4) override;

    void hc_pre(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                const WeightView& scale, const WeightView& base, int64_t iters, double hc_eps, double rms_eps,
                Dev<float> u, Dev<double> split) override;
    void hc_post(Dev<const float> y, Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E,
                 Dev<const double> split, Dev<float> X_out) override;
    void hc_head(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                 const WeightView& scale, const WeightView& base, double hc_eps, double rms_eps,
                 Dev<float> e) override;
    void hc_mean(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, Dev<float> out,
                 int64_t ldo) override;

    void route(Dev<const float> logits, Dev<const int32_t> tokens, int64_t n, const RouteParams& rp,
               Dev<int32_t> experts, Dev<float> weights) override;
    void moe(const MoeWeights& mw, Dev<const float> h, int64_t n_tokens, Dev<const int32_t> experts,
             Dev<const float> weights, int64_t n_used, double clamp, double clamp_shared, Dev<float> y) override;

    std::unique_ptr<SeqState> new_seq_state(const SeqShape& shape) override;
    std::unique_ptr<SeqState> seq_state_from_image(const SeqShape& shape, const SeqStateImage& image) override;
    void kv_store(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> kv) override;
    void compress(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> kappa, Dev<const float> gate,
                  int64_t ld, const CompressorParams& cp) override;
    void indexer_select(const SeqState& st, int64_t il, int64_t p0, Dev<const float> q, Dev<const float> w,
                        int64_t n, int64_t n_head, int64_t d, int64_t top_k, Dev<int32_t> selected) override;
    void attention(const SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> Q, int64_t n_head,
                   int64_t D, const CompRowView& comp, const WeightView& sinks, const RopeSpec& rope,
                   Dev<float> O) override;
    void attention_rows(Dev<const float> Q, int64_t n, int64_t n_head, int64_t D, Dev<const float> K, int64_t T,
                        const WeightView& sinks, const RopeSpec& rope, int64_t pos0, Dev<float> O) override;

    // The float copy of a vector view made by bind_weights (ArgumentError for a view it never saw).
    const float* vec(const WeightView& w) const;

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
    // Host versions the other calls share (no Dev wrapping inside the backend).
    void matmul_host(const WeightView& W, int64_t row0, int64_t n_rows, const float* X, int64_t ldx, int ncols,
                     float* Y, int64_t ldy);
    void rms_norm_host(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y);

    ThreadPool pool_;
    std::vector<std::vector<float>> vectors_;  // by view id: the float copy of each vector view
};

}  // namespace ds4
