// CPU backend: matmul, norms, RoPE and roundings; the factory. The other parts
// of the class live in the files cpu_backend.h lists.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/cpu_moe.h"
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

void cpu_rms_norm_row(const float* x, const float* w, int64_t n, double eps, float* y) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += (double)x[i] * (double)x[i];
    const double s = 1.0 / std::sqrt(ss / (double)n + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = (float)((double)x[i] * s * (w ? (double)w[i] : 1.0));
}

void cpu_rope_cos_sin(double pos, const RopeSpec& spec, double* cs) {
    rope_angles(pos, spec, cs);  // angle i lands in cs[i]; expand from the top so none is overwritten early
    for (int64_t i = spec.n_rot / 2 - 1; i >= 0; --i) {
        const double t = cs[i];
        cs[2 * i] = std::cos(t);
        cs[2 * i + 1] = std::sin(t);
    }
}

void cpu_rope_row(float* x, int64_t row_len, const double* cs, int64_t n_rot, bool inverse) {
    float* tail = x + (row_len - n_rot);
    for (int64_t i = 0; i < n_rot / 2; ++i) {
        const double c = cs[2 * i], s = inverse ? -cs[2 * i + 1] : cs[2 * i + 1];
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
        std::vector<double>& cs = scratch().rope_cs;
        cs.resize((size_t)spec.n_rot);
        for (int64_t i = b; i < e; ++i) {
            cpu_rope_cos_sin((double)(pos0 + i), spec, cs.data());
            for (int64_t r = 0; r < rows_per_token; ++r) {
                cpu_rope_row(x + (i * rows_per_token + r) * row_len, row_len, cs.data(), spec.n_rot, inverse);
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
    cpu_moe(pool_, lw, h, n_tokens, experts, weights, n_used, clamp, clamp_shared, y);
}

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace ds4
