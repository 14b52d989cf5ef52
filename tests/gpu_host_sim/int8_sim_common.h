// Helpers of the int8 host simulations (matmul_int8_sim.cpp, gemm_int8_sim.cpp): Q8_0 rows in
// the backend's split layout, columns quantised by the kernel, the GEMV kernel run as its
// launcher runs it. Include after the kernel sources.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

// Which integer tile product the kernels were built with (gpu_mma_s8.h), for the cases' names.
#if defined(DS4_MMA_EMULATE)
[[maybe_unused]] constexpr const char* kTilePath = "mma fragments";
#else
[[maybe_unused]] constexpr const char* kTilePath = "dp4a";
#endif

int failures = 0;

void report(bool ok, const std::string& name, const std::string& why = "") {
    std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name.c_str(), ok || why.empty() ? "" : ": ", ok ? "" : why.c_str());
    failures += !ok;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// The first index where two equally long vectors differ in their bits, or -1.
int64_t first_bit_difference(const std::vector<float>& a, const std::vector<float>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::memcmp(&a[i], &b[i], 4) != 0) return (int64_t)i;
    }
    return -1;
}

// Q8_0 rows in the backend's split layout: each row's nb x 32 codes, then its nb f16 scales.
struct Q8Rows {
    int64_t rows, n;
    uint64_t row_bytes;
    std::vector<uint8_t> bytes;
    int8_t code(int64_t r, int64_t i) const { return (int8_t)bytes[(size_t)(r * row_bytes + i)]; }
    float scale(int64_t r, int64_t b) const {
        uint16_t h;
        std::memcpy(&h, &bytes[(size_t)(r * row_bytes + (n / 32) * 32 + 2 * b)], 2);
        return ds4::f16_to_f32(h);
    }
};
Q8Rows random_q8(int64_t rows, int64_t n, std::mt19937_64& rng) {
    Q8Rows w{rows, n, (uint64_t)(n / 32 * 34), {}};
    w.bytes.resize((size_t)(rows * w.row_bytes));
    for (uint8_t& b : w.bytes) b = (uint8_t)rng();
    std::uniform_real_distribution<float> f(0.001f, 0.02f);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t b = 0; b < n / 32; ++b) {
            const uint16_t h = ds4::f32_to_f16(f(rng));
            std::memcpy(&w.bytes[(size_t)(r * w.row_bytes + (n / 32) * 32 + 2 * b)], &h, 2);
        }
    }
    return w;
}

// What launch_int8_columns writes: codes, then the scales on 16 bytes.
struct Cols {
    std::vector<uint8_t> bytes;
    const int8_t* q() const { return reinterpret_cast<const int8_t*>(bytes.data()); }
    const float* d(int64_t values) const {
        return reinterpret_cast<const float*>(bytes.data() + (values + 15) / 16 * 16);
    }
};
Cols quantise(const std::vector<float>& x, int64_t ldx, int64_t columns, int64_t groups, int64_t stride, int64_t n) {
    const int64_t values = columns * groups * n;
    Cols c{std::vector<uint8_t>((size_t)((values + 15) / 16 * 16 + 4 * (values / 32)), 0xAB)};
    auto* q = reinterpret_cast<int8_t*>(c.bytes.data());
    auto* d = const_cast<float*>(c.d(values));
    sim_launch((unsigned)((values + 255) / 256), 1, 256,
               [&] { ds4_int8_columns_kernel(x.data(), ldx, groups, stride, n, values, q, d); });
    return c;
}

std::vector<float> columns_of(int64_t n, int64_t ncols, std::mt19937_64& rng) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x((size_t)(n * ncols));
    for (float& v : x) v = nd(rng);
    return x;
}

// Y (ncols x rows) from ds4_matmul_int8_kernel<NC, R>: a block per row block, or (gx > 0) a
// grid of gx blocks striding over them (the one-column kernels' strided grid). wide: word loads
// where the rows allow them (the launcher's rule), byte loads elsewhere.
template <int NC, int R>
std::vector<float> run(const Q8Rows& w, const Cols& c, int64_t ncols, int wide, int64_t x_group_rows = 0,
                       int64_t x_groups = 1, unsigned gx = 0) {
    std::vector<float> y((size_t)(ncols * w.rows), -7.0f);
    const int64_t values = ncols * x_groups * w.n;
    const int64_t xg = x_group_rows > 0 ? x_group_rows : w.rows;
    const unsigned blocks = ds4::gpu::dot_row_blocks(w.rows, ds4::gpu::kInt8RowLanes, R);
    wide = wide && ds4::gpu::dot_wide_at(ds4::gpu::kInt8LoadBytes, w.bytes.data(), w.row_bytes);
    sim_launch(gx > 0 ? gx : blocks, (unsigned)((ncols + NC - 1) / NC), ds4::gpu::kDotBlock, [&] {
        ds4_matmul_int8_kernel<NC, R>(w.bytes.data(), w.row_bytes, w.n, w.rows, c.q(), c.d(values), (int)ncols,
                                      y.data(), w.rows, wide, xg, x_groups);
    });
    return y;
}

}  // namespace
