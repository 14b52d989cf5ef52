// gpu_hc.cu's mix kernel with the post (GpuBackend::hc_post_pre_norm) run on the host
// (sim_runtime.h) against what it replaces: the post stated here, each value's double sum in
// cpu_hc.cpp's order (post_j y + M[0][j] X_0 + M[1][j] X_1 + ..., rounded once), then the same
// mix kernel on those streams. The streams it writes and the mix's partial dots and sums of
// squares must be bit for bit the same: the model's shape (4 streams of 4096, 24 mix rows),
// several tokens, a last slice cut short, 1 and 16 streams, rows of F16 and F32. Prints one
// line per case; exit status 1 if any differs. tests/engine/test_gpu_kernels_host_sim.py builds
// and runs it.
#include "sim_runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_hc.cu"

namespace {

int failures = 0;

template <class T>
bool same(const std::string& name, const char* what, const std::vector<T>& a, const std::vector<T>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
            std::printf("FAIL %s: %s value %zu: %.17g instead of %.17g\n", name.c_str(), what, i, (double)a[i],
                        (double)b[i]);
            ++failures;
            return false;
        }
    }
    return true;
}

// type 0 (F32) or 1 (F16) rows of the n_mix x F mix matrix.
void run(const std::string& name, uint32_t type, int64_t n_tokens, int64_t n_hc, int64_t E, int64_t n_mix) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_real_distribution<double> ud(0.05, 1.0);
    const int64_t F = n_hc * E, S = (F + kMixSlice - 1) / kMixSlice, SS = 2 * n_hc + n_hc * n_hc;
    std::vector<float> y((size_t)(n_tokens * E)), X((size_t)(n_tokens * F));
    std::vector<double> split((size_t)(n_tokens * SS));
    for (float& v : y) v = nd(rng);
    for (float& v : X) v = nd(rng);
    for (double& v : split) v = ud(rng);
    const uint64_t row_bytes = (uint64_t)F * (type == 1 ? 2 : 4);
    std::vector<uint8_t> fn((size_t)(n_mix * row_bytes));
    for (int64_t k = 0; k < n_mix * F; ++k) {
        const float w = 0.05f * nd(rng);
        if (type == 1) {
            const uint16_t h = ds4::f32_to_f16(w);
            std::memcpy(&fn[(size_t)k * 2], &h, 2);
        } else {
            std::memcpy(&fn[(size_t)k * 4], &w, 4);
        }
    }
    auto mix = [&](const float* Xin, float* X_out, std::vector<float>& part, std::vector<double>& ss) {
        const ds4::gpu::HcPostIn in{y.data(), X.data(), split.data()};
        const int wide = type == 1 ? ds4::gpu::dot_wide<1>(fn.data(), row_bytes) : ds4::gpu::dot_wide<0>(fn.data(), row_bytes);
        const int x4 = X_out ? 0 : ds4::gpu::dot_x_aligned(Xin, F);
        sim_launch((unsigned)S, (unsigned)n_tokens, kMixThreads, [&] {
            if (type == 1) {
                ds4_hc_mix_partial_kernel<1>(fn.data(), row_bytes, wide, F, n_mix, Xin, x4, nullptr, part.data(),
                                             ss.data(), X_out, in, E);
            } else {
                ds4_hc_mix_partial_kernel<0>(fn.data(), row_bytes, wide, F, n_mix, Xin, x4, nullptr, part.data(),
                                             ss.data(), X_out, in, E);
            }
        });
    };

    // The post stated, then the mix of its streams.
    std::vector<float> X2((size_t)(n_tokens * F)), part2((size_t)(n_tokens * n_mix * S), -5.0f);
    std::vector<double> ss2((size_t)(n_tokens * S), -5.0);
    for (int64_t t = 0; t < n_tokens; ++t) {
        const double* post = split.data() + t * SS + n_hc;
        const double* M = split.data() + t * SS + 2 * n_hc;
        for (int64_t j = 0; j < n_hc; ++j) {
            for (int64_t i = 0; i < E; ++i) {
                double acc = post[j] * (double)y[(size_t)(t * E + i)];
                for (int64_t r = 0; r < n_hc; ++r) acc += M[r * n_hc + j] * (double)X[(size_t)(t * F + r * E + i)];
                X2[(size_t)(t * F + j * E + i)] = (float)acc;
            }
        }
    }
    mix(X2.data(), nullptr, part2, ss2);

    // The one kernel.
    std::vector<float> X1((size_t)(n_tokens * F), -3.0f), part1(part2.size(), -7.0f);
    std::vector<double> ss1(ss2.size(), -7.0);
    mix(X1.data(), X1.data(), part1, ss1);

    if (same(name, "streams", X1, X2) && same(name, "partial dots", part1, part2) &&
        same(name, "sums of squares", ss1, ss2)) {
        std::printf("ok   %s\n", name.c_str());
    }
}

}  // namespace

int main() {
    run("model shape: 4 streams of 4096, 24 rows, F16, 1 token", 1, 1, 4, 4096, 24);
    run("model shape, 3 tokens", 1, 3, 4, 4096, 24);
    run("last slice cut short (4 x 200 values)", 1, 2, 4, 200, 24);
    run("one stream of 64 (a quarter slice)", 0, 1, 1, 64, 3);
    run("16 streams of 40, F32 rows", 0, 2, 16, 40, 2 * 16 + 16 * 16);
    run("more rows than a pass (40), 2 streams of 512", 1, 1, 2, 512, 40);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
