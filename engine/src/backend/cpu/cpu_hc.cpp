// Hyper-connections on the CPU (ds4-model.md: HC pre/post with Sinkhorn, and the
// output head): the mix matmul serves every token of a block as a column, the
// rest is per token, split over tokens.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace ds4 {

namespace {

// Sinkhorn: softmax along each row, +eps, column-normalise, then iters-1 rounds of
// row- then column-normalisation (sums get +eps each time). m: the n_mix mix values.
void hc_split_from_mix(const float* m, int64_t n, const float* scale, const float* base, int64_t iters, double hc_eps,
                       double* split) {
    double* pre = split;
    double* post = split + n;
    double* M = split + 2 * n;
    for (int64_t i = 0; i < n; ++i) {
        pre[i] = cpu_sigmoid((double)scale[0] * m[i] + base[i]) + hc_eps;
        post[i] = 2.0 * cpu_sigmoid((double)scale[1] * m[n + i] + base[n + i]);
    }
    for (int64_t r = 0; r < n; ++r) {
        double mx = -INFINITY;
        for (int64_t c = 0; c < n; ++c) {
            const int64_t k = 2 * n + r * n + c;
            M[r * n + c] = (double)scale[2] * m[k] + base[k];
            mx = std::max(mx, M[r * n + c]);
        }
        double sum = 0.0;
        for (int64_t c = 0; c < n; ++c) sum += (M[r * n + c] = std::exp(M[r * n + c] - mx));
        for (int64_t c = 0; c < n; ++c) M[r * n + c] = M[r * n + c] / sum + hc_eps;
    }
    auto col_norm = [&] {
        for (int64_t c = 0; c < n; ++c) {
            double s = 0.0;
            for (int64_t r = 0; r < n; ++r) s += M[r * n + c];
            for (int64_t r = 0; r < n; ++r) M[r * n + c] /= (s + hc_eps);
        }
    };
    auto row_norm = [&] {
        for (int64_t r = 0; r < n; ++r) {
            double s = 0.0;
            for (int64_t c = 0; c < n; ++c) s += M[r * n + c];
            for (int64_t c = 0; c < n; ++c) M[r * n + c] /= (s + hc_eps);
        }
    };
    col_norm();
    for (int64_t it = 1; it < iters; ++it) {
        row_norm();
        col_norm();
    }
}

// out_i = sum_h w_h X_h[i] over the n_hc streams of one token, in h order.
void collapse_streams(const double* w, const float* Xt, int64_t n_hc, int64_t E, float* out) {
    for (int64_t i = 0; i < E; ++i) {
        double acc = 0.0;
        for (int64_t h = 0; h < n_hc; ++h) acc += w[h] * (double)Xt[h * E + i];
        out[i] = (float)acc;
    }
}

}  // namespace

// Mix logits of n_tokens tokens: m_t = fn . N(flatten X_t) (n_mix per token), in scratch f1.
const float* CpuBackend::hc_mix(const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                                double rms_eps) {
    const int64_t F = n_hc * E, n_mix = fn.n_rows();
    Scratch& S = scratch();
    S.f0.resize((size_t)(n_tokens * F));
    S.f1.resize((size_t)(n_tokens * n_mix));
    rms_norm_host(X, nullptr, F, n_tokens, rms_eps, S.f0.data());
    matmul_host(fn, 0, n_mix, S.f0.data(), F, (int)n_tokens, S.f1.data(), n_mix);
    return S.f1.data();
}

void CpuBackend::hc_pre(Dev<const float> Xd, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                        const WeightView& scale_w, const WeightView& base_w, int64_t iters, double hc_eps,
                        double rms_eps, Dev<float> ud, Dev<double> splitd) {
    const float *X = Xd.get(), *scale = vec(scale_w), *base = vec(base_w);
    float* u = ud.get();
    double* split = splitd.get();
    const int64_t F = n_hc * E, n_mix = fn.n_rows(), SS = hc_split_size(n_hc);
    const float* m = hc_mix(X, n_tokens, n_hc, E, fn, rms_eps);
    pool_.parallel_for(n_tokens, 1, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
            double* sp = split + t * SS;
            hc_split_from_mix(m + t * n_mix, n_hc, scale, base, iters, hc_eps, sp);
            collapse_streams(sp, X + t * F, n_hc, E, u + t * E);  // pre_h are the first n_hc values
        }
    });
}

void CpuBackend::hc_post(Dev<const float> yd, Dev<const float> Xd, int64_t n_tokens, int64_t n_hc, int64_t E,
                         Dev<const double> splitd, Dev<float> X_outd) {
    const float *y = yd.get(), *X = Xd.get();
    const double* split = splitd.get();
    float* X_out = X_outd.get();
    const int64_t SS = hc_split_size(n_hc);
    pool_.parallel_for(n_tokens, 1, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
            const double* post = split + t * SS + n_hc;
            const double* M = split + t * SS + 2 * n_hc;
            const float* Xt = X + t * n_hc * E;
            const float* yt = y + t * E;
            float* Ot = X_out + t * n_hc * E;
            for (int64_t j = 0; j < n_hc; ++j) {
                for (int64_t i = 0; i < E; ++i) {
                    double acc = post[j] * (double)yt[i];
                    for (int64_t r = 0; r < n_hc; ++r) acc += M[r * n_hc + j] * (double)Xt[r * E + i];
                    Ot[j * E + i] = (float)acc;
                }
            }
        }
    });
}

void CpuBackend::hc_head(Dev<const float> Xd, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                         const WeightView& scale_w, const WeightView& base_w, double hc_eps, double rms_eps,
                         Dev<float> ed) {
    const float* X = Xd.get();
    const float scale0 = vec(scale_w)[0], *base = vec(base_w);
    float* e = ed.get();
    const float* m = hc_mix(X, n_tokens, n_hc, E, fn, rms_eps);
    pool_.parallel_for(n_tokens, 1, [&](int64_t b, int64_t en) {
        std::vector<double>& w = scratch().d1;
        w.resize((size_t)n_hc);
        for (int64_t t = b; t < en; ++t) {
            for (int64_t h = 0; h < n_hc; ++h) w[h] = cpu_sigmoid((double)m[t * n_hc + h] * scale0 + base[h]) + hc_eps;
            collapse_streams(w.data(), X + t * n_hc * E, n_hc, E, e + t * E);
        }
    });
}

void CpuBackend::hc_mean(Dev<const float> Xd, int64_t n_tokens, int64_t n_hc, int64_t E, Dev<float> outd,
                         int64_t ldo) {
    const float* X = Xd.get();
    float* out = outd.get();
    pool_.parallel_for(n_tokens, 1, [&](int64_t b, int64_t en) {
        for (int64_t t = b; t < en; ++t) {
            const float* Xt = X + t * n_hc * E;
            float* o = out + t * ldo;
            for (int64_t i = 0; i < E; ++i) {
                double acc = 0.0;
                for (int64_t h = 0; h < n_hc; ++h) acc += (double)Xt[h * E + i];
                o[i] = (float)(acc / (double)n_hc);
            }
        }
    });
}

}  // namespace ds4
