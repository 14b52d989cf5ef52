// gpu_hc.cu's collapse-and-norm kernel (GpuBackend::hc_pre_norm) run on the host (sim_runtime.h)
// against the two kernels it replaces, hc_collapse then rms_norm: the rows must be bit for bit
// the same, for a row of the real model's width, rows shorter and longer than a block's threads
// and not a multiple of them, 1 to 16 streams, several tokens a launch, and extreme values
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

void collapse_norm_case(const std::string& name, int64_t n_tokens, int64_t n_hc, int64_t E, double x_scale) {
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
    const double rms_eps = 1e-6, hc_eps = 1e-6;

    std::vector<float> two((size_t)(n_tokens * E), -7.0f), one((size_t)(n_tokens * E), -9.0f);
    const unsigned slices = (unsigned)((E + kSlice - 1) / kSlice);
    sim_launch((unsigned)n_tokens, slices, kThreads, [&] {
        ds4_hc_collapse_kernel(part.data(), part_ss.data(), S, n_mix, rms_eps, X.data(), n_hc, E, scale.data(),
                               base.data(), hc_eps, two.data());
    });
    sim_launch((unsigned)n_tokens, 1, ds4::gpu::kNormThreads,
               [&] { ds4_rms_norm_kernel(two.data(), nw.data(), E, rms_eps, two.data()); });
    sim_launch((unsigned)n_tokens, 1, ds4::gpu::kNormThreads, [&] {
        ds4_hc_collapse_norm_kernel(part.data(), part_ss.data(), S, n_mix, rms_eps, X.data(), n_hc, E, scale.data(),
                                    base.data(), hc_eps, nw.data(), rms_eps, one.data());
    });
    for (size_t i = 0; i < one.size(); ++i) {
        if (std::memcmp(&one[i], &two[i], 4) != 0) {
            std::printf("FAIL %s: token %lld value %lld: %.9g instead of %.9g\n", name.c_str(), (long long)(i / E),
                        (long long)(i % E), one[i], two[i]);
            ++failures;
            return;
        }
    }
    std::printf("ok   %s\n", name.c_str());
}

}  // namespace

int main() {
    collapse_norm_case("model width, 4 streams, 1 token", 1, 4, 4096, 1.0);
    collapse_norm_case("model width, 4 streams, 3 tokens", 3, 4, 4096, 1.0);
    collapse_norm_case("short row (300), 1 stream", 2, 1, 300, 1.0);
    collapse_norm_case("row not a multiple of the block (1000), 16 streams", 1, 16, 1000, 1.0);
    collapse_norm_case("widest row the kernel holds (8192), 2 streams", 1, 2, 8192, 1.0);
    collapse_norm_case("large values (1e18)", 1, 4, 640, 1e18);
    collapse_norm_case("a row of zeros", 1, 4, 512, 0.0);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
