// gpu_hc.cu's collapse kernels and gpu_norm.cu's rms_norm run on the host (sim_runtime.h) against
// a serial statement of what they compute: hc_collapse's rows, hc_collapse then rms_norm, and the
// collapse-and-norm kernel (GpuBackend::hc_pre_norm's fused form) must be bit for bit the same,
// for a row of the real model's width, rows shorter and longer than a block's threads and not a
// multiple of them (rms_norm's rows held in registers and its loop beyond 4096), 1 to 16 streams,
// more slices than the collapse stages a round, mix sums whose bits depend on the slices' order,
// several tokens a launch, and extreme values
// (a row of zeros: the norm's eps alone). Prints one line per case; exit status 1 if any
// differs. tests/engine/test_gpu_kernels_host_sim.py builds and runs it.
#include "sim_runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_hc.cu"
#include "backend/gpu/gpu_norm.cu"

namespace {

int failures = 0;

// The serial statement of what the kernels compute (the oracle): mix value h = (float)(d_h *
// (1 / sqrt(q / F + eps))) with d_h the row's slices added in order in double and q the slices'
// sums of squares in order; w_h = sigmoid(scale0 m_h + base_h) + hc_eps; u_i = (float)(sum_h
// w_h x_h[i] in h order, in double); the norm: partial p_t = sum of u_i^2 over i = t, t + T, ...
// (T = kNormThreads) in order, in double, then gpu_tree.h's tree (for s = T/2 .. 1: p_x += p_x+s),
// y_i = (float)(u_i * (1 / sqrt(p_0 / E + eps)) * w_i). Returns the collapsed rows in u.
std::vector<float> serial_collapse_norm(const std::vector<float>& X, const std::vector<float>& part,
                                        const std::vector<double>& part_ss, int64_t n_tokens, int64_t n_hc,
                                        int64_t E, int64_t S, int64_t n_mix, const std::vector<float>& scale,
                                        const std::vector<float>& base, const std::vector<float>& nw, double rms_eps,
                                        double hc_eps, std::vector<float>& u) {
    const int64_t F = n_hc * E, T = ds4::gpu::kNormThreads;
    std::vector<float> y((size_t)(n_tokens * E));
    u.assign((size_t)(n_tokens * E), 0.0f);
    for (int64_t t = 0; t < n_tokens; ++t) {
        std::vector<double> w((size_t)n_hc);
        for (int64_t h = 0; h < n_hc; ++h) {
            double dot = 0.0, q = 0.0;
            for (int64_t s = 0; s < S; ++s) {
                dot += (double)part[(size_t)((t * n_mix + h) * S + s)];
                q += part_ss[(size_t)(t * S + s)];
            }
            const float m = (float)(dot * (1.0 / std::sqrt(q / (double)F + rms_eps)));
            w[(size_t)h] = ds4::gpu::sigmoid((double)scale[0] * m + base[(size_t)h]) + hc_eps;
        }
        float* ut = u.data() + t * E;
        for (int64_t i = 0; i < E; ++i) {
            double acc = 0.0;
            for (int64_t h = 0; h < n_hc; ++h) acc += w[(size_t)h] * (double)X[(size_t)(t * F + h * E + i)];
            ut[i] = (float)acc;
        }
        std::vector<double> p((size_t)T, 0.0);
        for (int64_t i = 0; i < E; ++i) p[(size_t)(i % T)] += (double)ut[i] * (double)ut[i];
        for (int64_t s = T / 2; s >= 1; s /= 2) {
            for (int64_t x = 0; x < s; ++x) p[(size_t)x] += p[(size_t)(x + s)];
        }
        const double sc = 1.0 / std::sqrt(p[0] / (double)E + rms_eps);
        for (int64_t i = 0; i < E; ++i) y[(size_t)(t * E + i)] = (float)((double)ut[i] * sc * (double)nw[(size_t)i]);
    }
    return y;
}

// The first value of got that differs from want in its bits, reported as a failure; true if none.
bool same_bits(const std::string& name, const char* what, const std::vector<float>& got, const std::vector<float>& want,
               int64_t E) {
    for (size_t i = 0; i < got.size(); ++i) {
        if (std::memcmp(&got[i], &want[i], 4) != 0) {
            std::printf("FAIL %s: %s: token %lld value %lld: %.9g instead of %.9g\n", name.c_str(), what,
                        (long long)(i / E), (long long)(i % E), got[i], want[i]);
            ++failures;
            return false;
        }
    }
    return true;
}

// Mix sums whose float value depends on the order the slices are added in (random slices' sums
// are exact in double, so they could not tell): each stream row's slices are 1, 2^-53, 2^-53,
// 2^-24, then zeros, and the slices' squares sum to F with eps 0, so the scale is exactly 1.
// In slice order the double sum rounds to 1 + 2^-24, a float tie that rounds to 1; from the
// last slice back it is 1 + 2^-24 + 2^-52, which rounds up to 1 + 2^-23.
void order_sensitive_mix(std::vector<float>& part, std::vector<double>& part_ss, int64_t n_tokens, int64_t n_hc,
                         int64_t n_mix, int64_t S, int64_t F) {
    const float first[4] = {1.0f, std::ldexp(1.0f, -53), std::ldexp(1.0f, -53), std::ldexp(1.0f, -24)};
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t h = 0; h < n_hc; ++h) {
            for (int64_t s = 0; s < S; ++s) part[(size_t)((t * n_mix + h) * S + s)] = s < 4 ? first[s] : 0.0f;
        }
        for (int64_t s = 0; s < S; ++s) part_ss[(size_t)(t * S + s)] = s == 0 ? (double)F : 0.0;
    }
}

void collapse_norm_case(const std::string& name, int64_t n_tokens, int64_t n_hc, int64_t E, double x_scale,
                        bool order_sensitive = false) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t F = n_hc * E, S = (F + kMixSlice - 1) / kMixSlice, n_mix = 2 * n_hc + n_hc * n_hc;
    std::vector<float> X((size_t)(n_tokens * F)), part((size_t)(n_tokens * n_mix * S)), nw((size_t)E);
    std::vector<double> part_ss((size_t)(n_tokens * S));
    for (float& v : X) v = (float)(nd(rng) * x_scale);
    for (float& v : part) v = nd(rng);
    for (double& v : part_ss) v = 1.0 + std::fabs((double)nd(rng));
    for (float& v : nw) v = 1.0f + 0.1f * nd(rng);
    std::vector<float> scale = {0.7f, 0.3f, 0.2f}, base((size_t)n_mix);
    for (float& v : base) v = 0.1f * nd(rng);
    const double rms_eps = order_sensitive ? 0.0 : 1e-6, hc_eps = 1e-6;
    if (order_sensitive) order_sensitive_mix(part, part_ss, n_tokens, n_hc, n_mix, S, F);

    std::vector<float> collapsed;
    const std::vector<float> want = serial_collapse_norm(X, part, part_ss, n_tokens, n_hc, E, S, n_mix, scale, base,
                                                         nw, rms_eps, hc_eps, collapsed);
    std::vector<float> two((size_t)(n_tokens * E), -7.0f), one((size_t)(n_tokens * E), -9.0f);
    const unsigned slices = (unsigned)((E + kSlice - 1) / kSlice);
    sim_launch((unsigned)n_tokens, slices, kThreads, [&] {
        ds4_hc_collapse_kernel(part.data(), part_ss.data(), S, n_mix, rms_eps, X.data(), n_hc, E, scale.data(),
                               base.data(), hc_eps, two.data());
    });
    if (!same_bits(name, "hc_collapse against the serial statement", two, collapsed, E)) return;
    sim_launch((unsigned)n_tokens, 1, ds4::gpu::kNormThreads,
               [&] { ds4_rms_norm_kernel(two.data(), nw.data(), E, rms_eps, two.data(), nullptr, nullptr); });
    if (!same_bits(name, "hc_collapse then rms_norm against the serial statement", two, want, E)) return;
    sim_launch((unsigned)n_tokens, 1, ds4::gpu::kNormThreads, [&] {
        ds4_hc_collapse_norm_kernel(part.data(), part_ss.data(), S, n_mix, rms_eps, X.data(), n_hc, E, scale.data(),
                                    base.data(), hc_eps, nw.data(), rms_eps, one.data());
    });
    if (!same_bits(name, "hc_collapse_norm against the serial statement", one, want, E)) return;
    std::printf("ok   %s\n", name.c_str());
}

}  // namespace

int main() {
    collapse_norm_case("model width, 4 streams, 1 token", 1, 4, 4096, 1.0);
    collapse_norm_case("model width, 4 streams, 3 tokens", 3, 4, 4096, 1.0);
    collapse_norm_case("short row (300), 1 stream", 2, 1, 300, 1.0);
    collapse_norm_case("row not a multiple of the block (1000), 16 streams", 1, 16, 1000, 1.0);
    collapse_norm_case("widest row the kernel holds (8192), 2 streams", 1, 2, 8192, 1.0);
    collapse_norm_case("16 streams of 4096 (256 slices: four staged rounds)", 2, 16, 4096, 1.0);
    collapse_norm_case("mix sums that depend on the slices' order", 1, 4, 4096, 1.0, true);
    collapse_norm_case("large values (1e18)", 1, 4, 640, 1e18);
    collapse_norm_case("a row of zeros", 1, 4, 512, 0.0);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
