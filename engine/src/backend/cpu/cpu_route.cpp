// Expert choice on the CPU (Backend::route): gate logits -> sqrt(softplus)
// scores, the experts of each token (hash table or biased top-k) and their
// normalised weights. Per token, in a fixed order; tokens are independent.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "common/error.h"

namespace ds4 {

namespace {

// MoE weight normalisation floor (spec 6.1035e-5; ds4.c uses 2^-14).
constexpr double kMoeWeightSumFloor = 6.103515625e-5;

double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }

}  // namespace

void CpuBackend::route(Dev<const float> logits, Dev<const int32_t> tokens, int64_t n, const RouteParams& rp,
                       Dev<int32_t> experts, Dev<float> weights) {
    const int64_t NX = rp.n_expert, K = rp.n_used;
    const float* bias = rp.bias ? vec(*rp.bias) : nullptr;
    if (!rp.hash_table && !bias) throw ArgumentError("route: neither a hash table nor a selection bias given");
    Scratch& S = scratch();
    S.d0.resize((size_t)NX);
    S.d1.resize((size_t)NX);
    S.order.resize((size_t)NX);
    double *s = S.d0.data(), *biased = S.d1.data();
    int32_t* order = S.order.data();
    for (int64_t i = 0; i < n; ++i) {
        const float* gl = logits.get() + i * NX;
        int32_t* ex = experts.get() + i * K;
        for (int64_t e = 0; e < NX; ++e) s[e] = std::sqrt(softplus(gl[e]));
        if (rp.hash_table) {
            // Expert ids were range-checked when the model was loaded.
            const int32_t tok = tokens.get()[i];
            if (tok < 0 || tok >= rp.hash_table->n_rows()) {
                throw ArgumentError("route: token id " + std::to_string(tok) + " outside tensor '" +
                                    rp.hash_table->name + "'");
            }
            std::memcpy(ex, rp.hash_table->row(tok), (size_t)K * 4);
        } else {
            // The bias only selects; the weights use the unbiased s. Ties keep the lower id first.
            for (int64_t e = 0; e < NX; ++e) biased[e] = s[e] + bias[e];
            std::iota(order, order + NX, 0);
            std::partial_sort(order, order + K, order + NX, [&](int32_t a, int32_t b) {
                return biased[a] > biased[b] || (biased[a] == biased[b] && a < b);
            });
            std::copy(order, order + K, ex);
        }
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k) sum += s[ex[k]];
        const double norm = rp.normalise ? 1.0 / std::max(sum, kMoeWeightSumFloor) : 1.0;
        for (int64_t k = 0; k < K; ++k) weights.get()[i * K + k] = (float)(s[ex[k]] * norm * rp.scale);
    }
}

}  // namespace ds4
