// The GPU's block roundings a thread per value (gpu_math.h block_round_trip_block, used by
// compress_rows and the indexer transform) run on the host (sim_runtime.h) against the serial
// code that defines their bits (core/numerics.h fp8_e4m3_round_trip, fp4_e2m1_round_trip), and
// gpu_ops.cu's indexer transform kernel against the CPU backend's row transform (Hadamard in
// double, then FP4). Rows of every length the kernels take, values that saturate, sit at the
// amax floor, are zero or -0, and rows whose length is not a multiple of the block. Prints one
// line per case; exit status 1 if any differs. tests/engine/test_gpu_kernels_host_sim.py builds
// and runs it.
#include "sim_runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_ops.cu"

namespace {

constexpr int kSimThreads = 128;
constexpr int kSimPer = 1024 / kSimThreads;

// The helper on a row copied to shared memory, as the kernels use it.
__global__ void round_row_kernel(float* x, int64_t n, int fp8) {
    __shared__ float buf[1024];
    const int64_t t = ds4_thread_x(), T = ds4_block_dim_x();
    for (int64_t i = t; i < n; i += T) buf[i] = x[i];
    ds4::gpu::block_round_trip_block<kSimPer>(buf, n, fp8 ? ds4::fp8_e4m3_rounding() : ds4::fp4_e2m1_rounding());
    for (int64_t i = t; i < n; i += T) x[i] = buf[i];
}

int failures = 0;

bool same_bits(const std::string& name, const std::vector<float>& got, const std::vector<float>& want) {
    for (size_t i = 0; i < got.size(); ++i) {
        if (std::memcmp(&got[i], &want[i], 4) != 0) {
            std::printf("FAIL %s: value %zu: %.9g instead of %.9g\n", name.c_str(), i, got[i], want[i]);
            ++failures;
            return false;
        }
    }
    std::printf("ok   %s\n", name.c_str());
    return true;
}

std::vector<float> row_of(const std::string& name, int64_t n, const std::function<float(std::mt19937_64&)>& v) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::vector<float> x((size_t)n);
    for (float& f : x) f = v(rng);
    return x;
}

void round_case(const std::string& name, int64_t n, bool fp8, const std::function<float(std::mt19937_64&)>& v) {
    std::vector<float> got = row_of(name, n, v), want = got;
    sim_launch(1, 1, kSimThreads, [&] { round_row_kernel(got.data(), n, fp8 ? 1 : 0); });
    if (fp8) {
        ds4::fp8_e4m3_round_trip(want.data(), n);
    } else {
        ds4::fp4_e2m1_round_trip(want.data(), n);
    }
    same_bits(name, got, want);
}

void transform_case(const std::string& name, int64_t rows, int64_t d, bool fp4) {
    std::vector<float> got = row_of(name, rows * d, [](std::mt19937_64& r) {
        return std::normal_distribution<float>(0.0f, 3.0f)(r);
    });
    std::vector<float> want = got;
    sim_launch((unsigned)rows, 1, kThreads, [&] { ds4_indexer_transform_kernel(got.data(), d, fp4 ? 1 : 0); });
    std::vector<double> tmp((size_t)d);
    for (int64_t r = 0; r < rows; ++r) {  // cpu_indexer_transform_row, step for step
        float* row = want.data() + r * d;
        for (int64_t i = 0; i < d; ++i) tmp[(size_t)i] = row[i];
        ds4::hadamard_inplace(tmp.data(), d);
        for (int64_t i = 0; i < d; ++i) row[i] = (float)tmp[(size_t)i];
        if (fp4) ds4::fp4_e2m1_round_trip(row, d);
    }
    same_bits(name, got, want);
}

}  // namespace

int main() {
    auto normal = [](std::mt19937_64& r) { return std::normal_distribution<float>(0.0f, 1.0f)(r); };
    auto wide = [](std::mt19937_64& r) {
        return std::normal_distribution<float>(0.0f, 1.0f)(r) * std::pow(2.0f, std::uniform_int_distribution<int>(-30, 30)(r));
    };
    auto tiny = [](std::mt19937_64& r) { return std::normal_distribution<float>(0.0f, 1e-6f)(r); };
    auto zeros = [](std::mt19937_64& r) { return std::uniform_int_distribution<int>(0, 1)(r) ? 0.0f : -0.0f; };
    auto coarse = [](std::mt19937_64& r) { return (float)std::uniform_int_distribution<int>(-600, 600)(r); };
    round_case("fp8, the KV row's 448 unrotated values", 448, true, normal);
    round_case("fp8, 1024 values over 30 octaves", 1024, true, wide);
    round_case("fp8, values under the amax floor", 512, true, tiny);
    round_case("fp8, zeros and -0", 256, true, zeros);
    round_case("fp8, integers past 448 (saturation, ties)", 1000, true, coarse);
    round_case("fp4, the indexer's 128 values", 128, false, normal);
    round_case("fp4, 1024 values over 30 octaves", 1024, false, wide);
    round_case("fp4, integers (ties)", 992, false, coarse);
    transform_case("indexer transform, 64 rows of 128, fp4", 64, 128, true);
    transform_case("indexer transform, 3 rows of 1024, fp4", 3, 1024, true);
    transform_case("indexer transform, 2 rows of 256, no fp4", 2, 256, false);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
