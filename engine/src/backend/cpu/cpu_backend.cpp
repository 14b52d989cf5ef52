// CPU implementation of the Backend interface: readable reference code first;
// the matmuls use the quant component's dot_row_cols (SIMD where available),
// split over output rows across the thread pool.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/cpu_moe.h"
#include "backend/cpu/cpu_numerics.h"
#include "backend/cpu/thread_pool.h"
#include "common/error.h"
#include "quant/quant_dot.h"

namespace ds4 {

namespace {

double sigmoid(double x) {
    // Two branches so neither exp overflows.
    if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
    const double e = std::exp(x);
    return e / (1.0 + e);
}

double inv_rms(const float* x, int64_t n, double eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += (double)x[i] * (double)x[i];
    return 1.0 / std::sqrt(ss / (double)n + eps);
}

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(int threads) : pool_(threads) {}

    std::string name() const override { return std::string("cpu(") + quant_dispatch_name() + ")"; }
    int n_threads() const override { return pool_.size(); }

    void matmul(const WeightView& W, int64_t row0, int64_t n_rows, const float* X, int64_t ldx, int ncols, float* Y,
                int64_t ldy) override {
        if (row0 < 0 || n_rows < 0 || row0 + n_rows > W.n_rows()) {
            throw ArgumentError("tensor '" + W.name + "': rows " + std::to_string(row0) + ".." +
                                std::to_string(row0 + n_rows) + " outside its " + std::to_string(W.n_rows()) + " rows");
        }
        const int64_t n = W.n_in();
        // Each output element is one dot_row_cols reduction: the split over rows
        // cannot change any value.
        pool_.parallel_for(n_rows, 8, [&](int64_t b, int64_t e) {
            matmul_rows(W.type, W.row(row0 + b), (int64_t)W.row_bytes, e - b, X, ldx, ncols, Y + b, ldy, n,
                        W.name.c_str());
        });
    }

    void rms_norm(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y) override {
        for (int64_t r = 0; r < n_rows; ++r) {
            const float* xr = x + r * n;
            float* yr = y + r * n;
            const double s = inv_rms(xr, n, eps);
            for (int64_t i = 0; i < n; ++i) yr[i] = (float)((double)xr[i] * s * (w ? (double)w[i] : 1.0));
        }
    }

    void rope_tail(float* x, int64_t n_rows, int64_t row_len, double pos, const RopeSpec& spec,
                   bool inverse) override {
        const std::vector<double> theta = rope_angles(pos, spec);
        for (int64_t r = 0; r < n_rows; ++r) {
            float* tail = x + r * row_len + (row_len - spec.n_rot);
            for (size_t i = 0; i < theta.size(); ++i) {
                const double c = std::cos(theta[i]), s = inverse ? -std::sin(theta[i]) : std::sin(theta[i]);
                const double x0 = tail[2 * i], x1 = tail[2 * i + 1];
                tail[2 * i] = (float)(x0 * c - x1 * s);
                tail[2 * i + 1] = (float)(x0 * s + x1 * c);
            }
        }
    }

    void fp8_kv_round_trip(float* x, int64_t n, int64_t n_rot) override { fp8_e4m3_round_trip(x, n - n_rot); }

    void indexer_transform(float* x, int64_t n_rows, int64_t d, bool fp4) override {
        std::vector<double>& tmp = scratch().krow;
        tmp.resize((size_t)d);
        for (int64_t r = 0; r < n_rows; ++r) {
            float* row = x + r * d;
            for (int64_t i = 0; i < d; ++i) tmp[(size_t)i] = row[i];
            hadamard_inplace(tmp.data(), d);
            for (int64_t i = 0; i < d; ++i) row[i] = (float)tmp[(size_t)i];
            if (fp4) fp4_e2m1_round_trip(row, d);
        }
    }

    void hc_pre(const float* X, int64_t n_hc, int64_t E, const WeightView& fn, const float* scale, const float* base,
                int64_t iters, double hc_eps, double rms_eps, float* u, HcSplit& split) override {
        std::vector<float>& x = scratch().hc_x;
        x.resize((size_t)(n_hc * E));
        rms_norm(X, nullptr, n_hc * E, 1, rms_eps, x.data());
        const int64_t n_mix = fn.n_rows();
        std::vector<float>& m = scratch().hc_m;
        m.resize((size_t)n_mix);
        matmul(fn, 0, n_mix, x.data(), n_hc * E, 1, m.data(), n_mix);
        const int64_t n = n_hc;
        split.pre.assign((size_t)n, 0.0);
        split.post.assign((size_t)n, 0.0);
        split.comb.assign((size_t)(n * n), 0.0);
        for (int64_t i = 0; i < n; ++i) {
            split.pre[(size_t)i] = sigmoid((double)scale[0] * m[(size_t)i] + base[i]) + hc_eps;
            split.post[(size_t)i] = 2.0 * sigmoid((double)scale[1] * m[(size_t)(n + i)] + base[n + i]);
        }
        // Sinkhorn: softmax along each row, +eps, column-normalise, then iters-1
        // rounds of row- then column-normalisation (sums get +eps each time).
        std::vector<double>& M = split.comb;
        for (int64_t r = 0; r < n; ++r) {
            double mx = -INFINITY;
            for (int64_t c = 0; c < n; ++c) {
                const int64_t k = 2 * n + r * n + c;
                M[(size_t)(r * n + c)] = (double)scale[2] * m[(size_t)k] + base[k];
                mx = std::max(mx, M[(size_t)(r * n + c)]);
            }
            double sum = 0.0;
            for (int64_t c = 0; c < n; ++c) sum += (M[(size_t)(r * n + c)] = std::exp(M[(size_t)(r * n + c)] - mx));
            for (int64_t c = 0; c < n; ++c) M[(size_t)(r * n + c)] = M[(size_t)(r * n + c)] / sum + hc_eps;
        }
        auto col_norm = [&] {
            for (int64_t c = 0; c < n; ++c) {
                double s = 0.0;
                for (int64_t r = 0; r < n; ++r) s += M[(size_t)(r * n + c)];
                for (int64_t r = 0; r < n; ++r) M[(size_t)(r * n + c)] /= (s + hc_eps);
            }
        };
        auto row_norm = [&] {
            for (int64_t r = 0; r < n; ++r) {
                double s = 0.0;
                for (int64_t c = 0; c < n; ++c) s += M[(size_t)(r * n + c)];
                for (int64_t c = 0; c < n; ++c) M[(size_t)(r * n + c)] /= (s + hc_eps);
            }
        };
        col_norm();
        for (int64_t it = 1; it < iters; ++it) {
            row_norm();
            col_norm();
        }
        for (int64_t i = 0; i < E; ++i) {
            double acc = 0.0;
            for (int64_t h = 0; h < n; ++h) acc += split.pre[(size_t)h] * (double)X[h * E + i];
            u[i] = (float)acc;
        }
    }

    void hc_post(const float* y, const float* X, int64_t n_hc, int64_t E, const HcSplit& split,
                 float* X_out) override {
        for (int64_t j = 0; j < n_hc; ++j) {
            for (int64_t i = 0; i < E; ++i) {
                double acc = split.post[(size_t)j] * (double)y[i];
                for (int64_t r = 0; r < n_hc; ++r) acc += split.comb[(size_t)(r * n_hc + j)] * (double)X[r * E + i];
                X_out[j * E + i] = (float)acc;
            }
        }
    }

    void hc_head(const float* X, int64_t n_hc, int64_t E, const WeightView& fn, float scale0, const float* base,
                 double hc_eps, double rms_eps, float* e) override {
        std::vector<float>& x = scratch().hc_x;
        x.resize((size_t)(n_hc * E));
        rms_norm(X, nullptr, n_hc * E, 1, rms_eps, x.data());
        std::vector<float>& m = scratch().hc_m;
        m.resize((size_t)n_hc);
        matmul(fn, 0, n_hc, x.data(), n_hc * E, 1, m.data(), n_hc);
        std::vector<double> w((size_t)n_hc);
        for (int64_t h = 0; h < n_hc; ++h) w[(size_t)h] = sigmoid((double)m[(size_t)h] * scale0 + base[h]) + hc_eps;
        for (int64_t i = 0; i < E; ++i) {
            double acc = 0.0;
            for (int64_t h = 0; h < n_hc; ++h) acc += w[(size_t)h] * (double)X[h * E + i];
            e[i] = (float)acc;
        }
    }

    void compressor_pool(const float* kv, const float* score, int64_t width, int64_t ratio, int64_t Dc,
                         float* pooled) override {
        const int64_t n_cand = ratio == 4 ? 8 : ratio;
        std::vector<double> s((size_t)n_cand), v((size_t)n_cand);
        for (int64_t j = 0; j < Dc; ++j) {
            for (int64_t t = 0; t < n_cand; ++t) {
                // ratio 4: previous window (rows 0..3) at column j, current (rows 4..7) at Dc + j.
                const int64_t col = (ratio == 4 && t >= 4) ? Dc + j : j;
                s[(size_t)t] = score[t * width + col];
                v[(size_t)t] = kv[t * width + col];
            }
            const double mx = *std::max_element(s.begin(), s.end());
            double den = 0.0, num = 0.0;
            for (int64_t t = 0; t < n_cand; ++t) {
                const double e = std::exp(s[(size_t)t] - mx);
                den += e;
                num += e * v[(size_t)t];
            }
            pooled[j] = (float)(num / den);
        }
    }

    void indexer_scores(const float* q, const float* w, int64_t n_head, int64_t d, const uint16_t* rows,
                        int64_t n_rows, double* scores) override {
        const AttnKernels& ak = attn_kernels();
        Scratch& S = scratch();
        S.qd.resize((size_t)(n_head * d));
        for (int64_t i = 0; i < n_head * d; ++i) S.qd[(size_t)i] = q[i];
        S.krow.resize((size_t)d);
        for (int64_t c = 0; c < n_rows; ++c) {
            ak.f16_to_f64_row(rows + c * d, S.krow.data(), d);
            double acc = 0.0;
            for (int64_t h = 0; h < n_head; ++h) {
                const double dot = ak.dot(S.qd.data() + h * d, S.krow.data(), d);
                acc += (double)w[h] * std::max(dot, 0.0);
            }
            scores[c] = acc;
        }
    }

    // Keys are converted to float once per call and shared by all heads; scores
    // and the weighted sum reduce in double through attn_kernels (same bits on
    // every ISA). Scratch lives in the backend: no allocation per token once warm.
    void attention(const float* Q, int64_t n_head, int64_t D, const KeyRows& keys, const float* sinks,
                   float* O) override {
        const AttnKernels& ak = attn_kernels();
        const int64_t T = (int64_t)keys.rows.size();
        Scratch& S = scratch();  // the caller's; the workers get pointers into it
        S.K.resize((size_t)(T * D));
        for (int64_t t = 0; t < T; ++t) ak.f16_to_f64_row(keys.rows[(size_t)t], S.K.data() + t * D, D);
        S.qd.resize((size_t)(n_head * D));
        S.s.resize((size_t)(n_head * T));
        const double* K = S.K.data();
        double* const qd = S.qd.data();
        double* const sd = S.s.data();
        const double inv_sqrt_d = 1.0 / std::sqrt((double)D);
        // Heads in groups of 4 (a group reads each key row once); a head's bits do
        // not depend on its group.
        const int64_t n_groups = (n_head + 3) / 4;
        pool_.parallel_for(n_groups, 1, [&](int64_t gb, int64_t ge) {
            for (int64_t g = gb; g < ge; ++g) {
                const int64_t h0 = g * 4;
                const int nh = (int)std::min<int64_t>(4, n_head - h0);
                double* q = qd + h0 * D;
                double* s = sd + h0 * T;
                for (int64_t i = 0; i < nh * D; ++i) q[i] = Q[h0 * D + i];
                ak.scores4(q, nh, K, T, D, s);
                double den[4];
                for (int j = 0; j < nh; ++j) {
                    const int64_t h = h0 + j;
                    double* sh = s + j * T;
                    double mx = sinks[h];
                    for (int64_t t = 0; t < T; ++t) {
                        sh[t] *= inv_sqrt_d;
                        mx = std::max(mx, sh[t]);
                    }
                    den[j] = std::exp((double)sinks[h] - mx);  // the sink adds mass, carries no value
                    for (int64_t t = 0; t < T; ++t) {
                        sh[t] = std::exp(sh[t] - mx);  // now the weight
                        den[j] += sh[t];
                    }
                }
                ak.weighted_sums4(s, nh, K, T, D, q);  // q is no longer needed: the sums land there
                for (int j = 0; j < nh; ++j) {
                    for (int64_t i = 0; i < D; ++i) O[(h0 + j) * D + i] = (float)(q[j * D + i] / den[j]);
                }
            }
        });
    }

    void moe(const Ds4LayerWeights& lw, const float* h, int64_t n_tokens, const int32_t* experts,
             const float* weights, int64_t n_used, double clamp, double clamp_shared, float* y) override {
        cpu_moe(pool_, lw, h, n_tokens, experts, weights, n_used, clamp, clamp_shared, y);  // backend/cpu/cpu_moe.cpp
    }

private:
    ThreadPool pool_;
    // Per-call scratch of the calling thread, reused: it grows to the largest call,
    // then stays (no allocation per token). Thread-local, not members, because two
    // sessions of one model may run concurrently from Python threads (the bindings
    // release the GIL).
    struct Scratch {
        std::vector<double> K, krow, qd, s;
        std::vector<float> hc_x, hc_m;
    };
    static Scratch& scratch() {
        thread_local Scratch s;
        return s;
    }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace ds4
