// gpu_top_k.cu's kernel (Backend::row_top_k) run on the host (sim_runtime.h) against a stable
// sort of each row by (NaN last, value descending): rows of 1 to 129280 values with ties, NaN,
// -0 beside +0 and infinities, k from 1 to 64. Prints one line per case; exit status 1 if any
// differs. tests/engine/test_gpu_kernels_host_sim.py builds and runs it.
#include "sim_runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_top_k.cu"

namespace {

int failures = 0;

void row_case(const std::string& name, int64_t rows, int64_t n, int64_t k,
              const std::function<float(std::mt19937_64&, int64_t)>& value) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::vector<float> x((size_t)(rows * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = value(rng, (int64_t)(i % (size_t)n));
    std::vector<int32_t> ids((size_t)(rows * k), -7);
    std::vector<float> vals((size_t)(rows * k), -7.0f);
    sim_launch((unsigned)rows, 1, kThreads, [&] { ds4_row_top_k_kernel(x.data(), n, k, ids.data(), vals.data()); });
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = x.data() + r * n;
        std::vector<int32_t> order((size_t)n);
        for (int64_t i = 0; i < n; ++i) order[(size_t)i] = (int32_t)i;
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
            const bool na = std::isnan(row[a]), nb = std::isnan(row[b]);
            return na != nb ? nb : (!na && row[a] > row[b]);
        });
        for (int64_t j = 0; j < k; ++j) {
            const int32_t want = order[(size_t)j], got = ids[(size_t)(r * k + j)];
            const float gv = vals[(size_t)(r * k + j)];
            if (got != want || __builtin_bit_cast(uint32_t, gv) != __builtin_bit_cast(uint32_t, row[want])) {
                std::printf("FAIL %s: row %lld entry %lld: id %d instead of %d\n", name.c_str(), (long long)r,
                            (long long)j, got, want);
                ++failures;
                return;
            }
        }
    }
    std::printf("ok   %s\n", name.c_str());
}

}  // namespace

int main() {
    auto normal = [](std::mt19937_64& r, int64_t) { return std::normal_distribution<float>(0.0f, 1.0f)(r); };
    auto coarse = [](std::mt19937_64& r, int64_t) { return (float)std::uniform_int_distribution<int>(-3, 3)(r); };
    auto zeros_nan = [](std::mt19937_64& r, int64_t) {
        const int u = std::uniform_int_distribution<int>(0, 9)(r);
        return u < 3 ? 0.0f : u < 6 ? -0.0f : u < 8 ? NAN : u == 8 ? -INFINITY : 1e-30f;
    };
    auto all_nan = [](std::mt19937_64&, int64_t) { return NAN; };
    row_case("vocabulary row, k 1", 2, 129280, 1, normal);
    row_case("vocabulary row, k 64", 1, 129280, 64, coarse);
    row_case("zeros, NaN, -inf", 3, 4099, 40, zeros_nan);
    row_case("all NaN", 1, 300, 5, all_nan);
    row_case("one value", 2, 1, 1, normal);
    row_case("k = n", 1, 7, 7, coarse);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
