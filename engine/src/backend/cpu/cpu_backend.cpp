// CPU backend: matmul, norms, RoPE and roundings; the factory. The other parts
// of the class live in the files cpu_backend.h lists.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_numerics.h"
#include "common/error.h"
#include "quant/quant_dot.h"

namespace ds4 {

double cpu_sigmoid(double x) {
    // Two branches so neither exp overflows.
    if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
    const double e = std::exp(x);
    return e / (1.0 + e);
}

namespace {

// silu(min(gate, c)) * clamp(up, -c, c); no clamp when c <= 1e-6 (ds4.c and llama.cpp).
float clamped_swiglu(float gate, float up, double c) {
    double g = gate, u = up;
    if (c > 1e-6) {
        g = std::min(g, c);
        u = std::min(std::max(u, -c), c);
    }
    return (float)(g * cpu_sigmoid(g) * u);
}

}  // namespace

void cpu_rms_norm_row(const float* x, const float* w, int64_t n, double eps, float* y) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += (double)x[i] * (double)x[i];
    const double s = 1.0 / std::sqrt(ss / (double)n + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = (float)((double)x[i] * s * (w ? (double)w[i] : 1.0));
}

void cpu_rope_row(float* x, int64_t row_len, const double* theta, int64_t n_rot, bool inverse) {
    float* tail = x + (row_len - n_rot);
    for (int64_t i = 0; i < n_rot / 2; ++i) {
        const double c = std::cos(theta[i]), s = inverse ? -std::sin(theta[i]) : std::sin(theta[i]);
        const double x0 = tail[2 * i], x1 = tail[2 * i + 1];
        tail[2 * i] = (float)(x0 * c - x1 * s);
        tail[2 * i + 1] = (float)(x0 * s + x1 * c);
    }
}

void cpu_indexer_transform_row(float* row, int64_t d, bool fp4, std::vector<double>& tmp) {
    tmp.resize((size_t)d);
    for (int64_t i = 0; i < d; ++i) tmp[(size_t)i] = row[i];
    hadamard_inplace(tmp.data(), d);
    for (int64_t i = 0; i < d; ++i) row[i] = (float)tmp[(size_t)i];
    if (fp4) fp4_e2m1_round_trip(row, d);
}

std::string CpuBackend::name() const { return std::string("cpu(") + quant_dispatch_name() + ")"; }

void CpuBackend::matmul(const WeightView& W, int64_t row0, int64_t n_rows, const float* X, int64_t ldx, int ncols,
                        float* Y, int64_t ldy) {
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

void CpuBackend::rms_norm(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y) {
    pool_.parallel_for(n_rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) cpu_rms_norm_row(x + r * n, w, n, eps, y + r * n);
    });
}

void CpuBackend::rope_tail(float* x, int64_t n_tokens, int64_t rows_per_token, int64_t row_len, int64_t pos0,
                           const RopeSpec& spec, bool inverse) {
    pool_.parallel_for(n_tokens, 1, [&](int64_t b, int64_t e) {
        std::vector<double>& theta = scratch().theta;
        theta.resize((size_t)(spec.n_rot / 2));
        for (int64_t i = b; i < e; ++i) {
            rope_angles((double)(pos0 + i), spec, theta.data());
            for (int64_t r = 0; r < rows_per_token; ++r) {
                cpu_rope_row(x + (i * rows_per_token + r) * row_len, row_len, theta.data(), spec.n_rot, inverse);
            }
        }
    });
}

void CpuBackend::fp8_kv_round_trip(float* x, int64_t n_rows, int64_t n, int64_t n_rot) {
    pool_.parallel_for(n_rows, 1, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) fp8_e4m3_round_trip(x + r * n, n - n_rot);
    });
}

void CpuBackend::indexer_transform(float* x, int64_t n_rows, int64_t d, bool fp4) {
    pool_.parallel_for(n_rows, 1, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) cpu_indexer_transform_row(x + r * d, d, fp4, scratch().d0);
    });
}

void CpuBackend::moe(const Ds4LayerWeights& lw, const float* h, int64_t n_tokens, const int32_t* experts,
                     const float* weights, int64_t n_used, double clamp, double clamp_shared, float* y) {
    const int64_t E = lw.ffn_down_shexp.n_rows(), F = lw.ffn_gate_shexp.n_rows(), K = n_used;
    // down[(i*(K+1) + k) * E ..]: output of token i's k-th expert; slot K is the shared expert.
    // All buffers are backend scratch: they grow to the largest block, then stay.
    Scratch& S = scratch();
    S.moe_down.resize((size_t)(n_tokens * (K + 1) * E));
    std::vector<float>& down = S.moe_down;
    // Runs one expert on the listed (token, slot) pairs, the tokens as matmul columns.
    auto run = [&](const WeightView& wg, const WeightView& wu, const WeightView& wd, double c,
                   const std::vector<std::pair<int64_t, int64_t>>& uses) {
        const int64_t m = (int64_t)uses.size();
        S.moe_x.resize((size_t)(m * E));
        S.moe_gate.resize((size_t)(m * F));
        S.moe_up.resize((size_t)(m * F));
        S.moe_out.resize((size_t)(m * E));
        float *x = S.moe_x.data(), *gate = S.moe_gate.data(), *up = S.moe_up.data(), *out = S.moe_out.data();
        for (int64_t j = 0; j < m; ++j) {
            const float* hj = h + uses[(size_t)j].first * E;
            std::copy(hj, hj + E, x + j * E);
        }
        matmul(wg, 0, F, x, E, (int)m, gate, F);
        matmul(wu, 0, F, x, E, (int)m, up, F);
        // Elementwise (one exp each): split over the pool, values cannot change.
        pool_.parallel_for(m * F, 512, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) gate[i] = clamped_swiglu(gate[i], up[i], c);
        });
        matmul(wd, 0, E, gate, F, (int)m, out, E);
        for (int64_t j = 0; j < m; ++j) {
            const int64_t slot = uses[(size_t)j].first * (K + 1) + uses[(size_t)j].second;
            std::copy(out + j * E, out + (j + 1) * E, down.begin() + slot * E);
        }
    };
    // Group (token, k) by expert, experts in ascending id order.
    std::vector<std::vector<std::pair<int64_t, int64_t>>>& by_expert = S.moe_by_expert;
    by_expert.resize((size_t)lw.ffn_gate_exps.ne[2]);
    for (auto& v : by_expert) v.clear();
    for (int64_t i = 0; i < n_tokens; ++i) {
        for (int64_t k = 0; k < K; ++k) by_expert[(size_t)experts[i * K + k]].push_back({i, k});
    }
    for (size_t e = 0; e < by_expert.size(); ++e) {
        if (by_expert[e].empty()) continue;
        const int64_t id = (int64_t)e;
        run(lw.gate_exp[(size_t)id], lw.up_exp[(size_t)id], lw.down_exp[(size_t)id], clamp, by_expert[e]);
    }
    std::vector<std::pair<int64_t, int64_t>>& all = S.moe_all;
    all.resize((size_t)n_tokens);
    for (int64_t i = 0; i < n_tokens; ++i) all[(size_t)i] = {i, K};
    run(lw.ffn_gate_shexp, lw.ffn_up_shexp, lw.ffn_down_shexp, clamp_shared, all);
    // Per-token sums in a fixed order (k = 0..K-1, then the shared expert); each
    // y element is its own sum, so splitting over d cannot change a value.
    pool_.parallel_for(E, 128, [&](int64_t db, int64_t de) {
        for (int64_t i = 0; i < n_tokens; ++i) {
            for (int64_t d = db; d < de; ++d) {
                double acc = 0.0;
                const float* slots = down.data() + i * (K + 1) * E + d;  // slot k at slots[k * E]
                for (int64_t k = 0; k < K; ++k) acc += (double)weights[i * K + k] * (double)slots[k * E];
                acc += (double)slots[K * E];
                y[i * E + d] = (float)acc;
            }
        }
    });
}

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace ds4
