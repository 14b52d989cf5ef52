// Device against host for core/numerics.h: runs ds4_gpu_numerics_probe
// (engine/src/backend/gpu/gpu_numerics_probe.cu) on the GPU and the same DS4_HD
// functions on the host over the same inputs, and counts results whose bits differ.
// Used by tests/gpu/test_gpu_numerics.py. Usage: gpu_numerics_harness [f16_stride]
// (1: every float through the F16 round trip; larger: every stride-th bit pattern).
// Prints one line per operation: "<op> cases=<n> mismatches=<m> [max_ulp=<u>]".
#include "backend/gpu/gpu_runtime.h"
#include "core/numerics.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

extern "C" int ds4_gpu_numerics_probe(int op, float* xf_dev, double* xd_dev, int64_t n_rows, int64_t n,
                                      const ds4::RopeSpec* rope, void* stream);

namespace {

template <class T>
T* dev_alloc(size_t n) {
    void* p = nullptr;
    DS4_GPU_CHECK(Malloc, &p, n * sizeof(T));
    return static_cast<T*>(p);
}

// The probe over rows of n floats (ops 0-2) on the device; returns what came back.
std::vector<float> on_device_f(int op, const std::vector<float>& x, int64_t n) {
    float* d = dev_alloc<float>(x.size());
    DS4_GPU_CHECK(Memcpy, d, x.data(), x.size() * 4, ds4GpuMemcpyHostToDevice);
    const int rc = ds4_gpu_numerics_probe(op, d, nullptr, (int64_t)x.size() / n, n, nullptr, nullptr);
    if (rc != 0) {
        std::fprintf(stderr, "probe op %d failed (%d)\n", op, rc);
        std::exit(2);
    }
    std::vector<float> out(x.size());
    DS4_GPU_CHECK(Memcpy, out.data(), d, x.size() * 4, ds4GpuMemcpyDeviceToHost);
    DS4_GPU_CHECK(Free, d);
    return out;
}

std::vector<double> on_device_d(int op, const std::vector<double>& x, int64_t n, const ds4::RopeSpec* rope) {
    double* d = dev_alloc<double>(x.size());
    DS4_GPU_CHECK(Memcpy, d, x.data(), x.size() * 8, ds4GpuMemcpyHostToDevice);
    const int rc = ds4_gpu_numerics_probe(op, nullptr, d, (int64_t)x.size() / n, n, rope, nullptr);
    if (rc != 0) {
        std::fprintf(stderr, "probe op %d failed (%d)\n", op, rc);
        std::exit(2);
    }
    std::vector<double> out(x.size());
    DS4_GPU_CHECK(Memcpy, out.data(), d, x.size() * 8, ds4GpuMemcpyDeviceToHost);
    DS4_GPU_CHECK(Free, d);
    return out;
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
uint64_t bits(double f) {
    uint64_t u;
    std::memcpy(&u, &f, 8);
    return u;
}

// Inputs for the block round trips: several magnitudes, arbitrary bit patterns (NaN, inf,
// subnormals), grid points and midpoints (the ties), tiny values.
std::vector<float> block_inputs(std::mt19937_64& rng, int64_t rows, int64_t n, const double* grid, int gn,
                                float top) {
    std::normal_distribution<double> nd;
    std::uniform_real_distribution<double> ud(-40, 20);
    std::vector<float> x((size_t)(rows * n));
    for (int64_t r = 0; r < rows; ++r) {
        const int mode = (int)(r % 5);
        const double sc = std::exp(ud(rng));
        for (int64_t i = 0; i < n; ++i) {
            float v;
            if (mode == 0) {
                v = (float)(nd(rng) * sc);
            } else if (mode == 1) {
                const uint32_t u = (uint32_t)rng();
                std::memcpy(&v, &u, 4);
            } else if (mode == 2) {
                const int k = (int)(rng() % (uint64_t)(2 * gn - 1));
                v = (float)(k < gn ? grid[k] : (grid[k - gn] + grid[k - gn + 1]) / 2);
                if (rng() & 1) v = -v;
            } else if (mode == 3) {
                v = (float)(nd(rng) * 1e-30);
            } else {
                v = (float)(nd(rng) * sc * 1e6);
            }
            x[(size_t)(r * n + i)] = v;
        }
        if (mode == 2) x[(size_t)(r * n)] = top;  // amax = top: scale 1, the ties stay ties
    }
    return x;
}

int64_t count_mismatch(const std::vector<float>& a, const std::vector<float>& b) {
    int64_t m = 0;
    for (size_t i = 0; i < a.size(); ++i) m += bits(a[i]) != bits(b[i]);
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    const uint64_t stride = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
    int64_t total_bad = 0;

    {  // F16 round trip of every stride-th float bit pattern
        const int64_t chunk = int64_t(1) << 24, n = 1024;
        int64_t cases = 0, bad = 0;
        std::vector<float> x;
        for (uint64_t base = 0; base < (uint64_t(1) << 32); base += (uint64_t)chunk * stride) {
            x.clear();
            for (int64_t i = 0; i < chunk && base + (uint64_t)i * stride < (uint64_t(1) << 32); ++i) {
                const uint32_t u = (uint32_t)(base + (uint64_t)i * stride);
                float f;
                std::memcpy(&f, &u, 4);
                x.push_back(f);
            }
            while (x.size() % n) x.push_back(0.0f);
            std::vector<float> host = x;
            for (float& v : host) v = ds4::f16_to_f32(ds4::f32_to_f16(v));
            bad += count_mismatch(host, on_device_f(0, x, n));
            cases += (int64_t)x.size();
        }
        std::printf("f16 cases=%lld mismatches=%lld\n", (long long)cases, (long long)bad);
        total_bad += bad;
    }
    std::mt19937_64 rng(7);
    double e4m3[127], e2m1[8];
    for (int c = 0; c < 127; ++c) e4m3[c] = ds4::num::e4m3_value(c);
    for (int c = 0; c < 8; ++c) e2m1[c] = ds4::num::e2m1_value(c);
    for (int64_t n : {64, 48}) {  // FP8: whole blocks, and a short row (head_dim 64 minus 16 RoPE dims)
        const std::vector<float> x = block_inputs(rng, 20000, n, e4m3, 127, 448.0f);
        std::vector<float> host = x;
        for (size_t r = 0; r < x.size() / (size_t)n; ++r) ds4::fp8_e4m3_round_trip(host.data() + r * n, n);
        const int64_t bad = count_mismatch(host, on_device_f(1, x, n));
        std::printf("fp8_n%lld cases=%zu mismatches=%lld\n", (long long)n, x.size(), (long long)bad);
        total_bad += bad;
    }
    {
        const int64_t n = 64;
        const std::vector<float> x = block_inputs(rng, 20000, n, e2m1, 8, 6.0f);
        std::vector<float> host = x;
        for (size_t r = 0; r < x.size() / (size_t)n; ++r) ds4::fp4_e2m1_round_trip(host.data() + r * n, n);
        const int64_t bad = count_mismatch(host, on_device_f(2, x, n));
        std::printf("fp4 cases=%zu mismatches=%lld\n", x.size(), (long long)bad);
        total_bad += bad;
    }
    // Hadamard per thread (op 3: core/numerics.h) and by a block (op 5: gpu_math.h hadamard_block).
    for (const auto& [op, name, rows] : {std::tuple<int, const char*, int>{3, "hadamard", 2000},
                                        std::tuple<int, const char*, int>{5, "hadamard_block", 500}}) {
        for (int64_t n : {32, 128, 512}) {
            std::normal_distribution<double> nd;
            std::vector<double> x((size_t)(rows * n));
            for (double& v : x) v = nd(rng);
            std::vector<double> host = x;
            for (size_t r = 0; r < x.size() / (size_t)n; ++r) ds4::hadamard_inplace(host.data() + r * n, n);
            const std::vector<double> dev = on_device_d(op, x, n, nullptr);
            int64_t bad = 0;
            for (size_t i = 0; i < x.size(); ++i) bad += bits(host[i]) != bits(dev[i]);
            std::printf("%s_n%lld cases=%zu mismatches=%lld\n", name, (long long)n, x.size(), (long long)bad);
            total_bad += bad;
        }
    }
    {  // the dequantisers' integer-to-float conversions against C's, every byte
        const std::vector<float> dev = on_device_f(6, std::vector<float>(4 * 256, 0.0f), 256);
        int64_t bad = 0;
        for (int r = 0; r < 4; ++r) {
            for (int b = 0; b < 256; ++b) {
                const float want = (r % 2 == 0) ? (float)b : (float)(int8_t)(uint8_t)b;
                bad += bits(want) != bits(dev[(size_t)(r * 256 + b)]);
            }
        }
        std::printf("int_to_float cases=1024 mismatches=%lld\n", (long long)bad);
        total_bad += bad;
    }
    {  // RoPE angles: pow/log come from each side's math library, so ulps, not bits
        ds4::RopeSpec specs[2];
        specs[0].n_rot = 64;
        specs[0].freq_base = 10000.0;
        specs[1] = specs[0];
        specs[1].freq_base = 160000.0;
        specs[1].ext_factor = 1.0;
        specs[1].freq_scale = 1.0 / 16;
        specs[1].n_ctx_orig = 65536;
        int64_t cases = 0, bad = 0;
        uint64_t max_ulp = 0;
        for (const ds4::RopeSpec& spec : specs) {
            const int64_t n = spec.n_rot / 2, rows = 4096;
            std::vector<double> x((size_t)(rows * n), 0.0);
            for (int64_t r = 0; r < rows; ++r) x[(size_t)(r * n)] = (double)(r < 2048 ? r : rng() % 1048576);
            std::vector<double> host = x;
            for (int64_t r = 0; r < rows; ++r) ds4::rope_angles(x[(size_t)(r * n)], spec, host.data() + r * n);
            const std::vector<double> dev = on_device_d(4, x, n, &spec);
            for (size_t i = 0; i < x.size(); ++i) {
                const uint64_t a = bits(host[i]), b = bits(dev[i]);
                const uint64_t ulp = a > b ? a - b : b - a;  // same sign here (angles >= 0)
                bad += ulp != 0;
                if (ulp > max_ulp) max_ulp = ulp;
            }
            cases += (int64_t)x.size();
        }
        std::printf("rope cases=%lld mismatches=%lld max_ulp=%llu\n", (long long)cases, (long long)bad,
                    (unsigned long long)max_ulp);
    }
    return total_bad == 0 ? 0 : 1;
}
