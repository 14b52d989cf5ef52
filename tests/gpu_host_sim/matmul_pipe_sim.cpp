// Decode's double-buffered block walk (gpu_dot.h lane_chunks with PIPE: the one-column matmul
// kernels) run on the host (sim_runtime.h) against the plain walk of the two-column kernels,
// one column: every row must come out bit for bit the same (that is verify == decode), for the
// types whose rows the walk takes by block (Q8_0 split, Q4_0, Q2_K, Q4_K, MXFP4, ROCmFP2), one-row
// and row groups, 32 and 64 lanes, and row lengths whose blocks a lane takes in a last round
// shorter than the others. Prints one line per case; exit status 1 if any differs.
// tests/engine/test_gpu_kernels_host_sim.py builds and runs it.
#include "sim_runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_matmul_kernels.h"

namespace {

int failures = 0;

// A row of n values of type T: random codes, then every scale set finite and moderate (a random
// f16 or exponent byte can be Inf or NaN, and NaN everywhere would compare equal whatever the order).
template <uint32_t T>
std::vector<uint8_t> random_row(int64_t n, std::mt19937_64& rng) {
    constexpr int64_t QK = ds4::gpu::TypeInfo<T>::block, B = ds4::gpu::TypeInfo<T>::bytes;
    const int64_t nb = n / QK;
    std::vector<uint8_t> row((size_t)(nb * B));
    for (uint8_t& b : row) b = (uint8_t)rng();
    std::uniform_real_distribution<float> u(0.5f, 2.0f);
    auto f16_at = [&](int64_t off) {
        const uint16_t h = ds4::f32_to_f16(0.01f * u(rng));
        std::memcpy(&row[(size_t)off], &h, 2);
    };
    for (int64_t b = 0; b < nb; ++b) {
        if constexpr (T == 8) {
            f16_at(nb * 32 + 2 * b);  // the split layout: the row's codes, then its scales
        } else if constexpr (T == 2) {
            f16_at(b * B);
        } else if constexpr (T == 10) {
            f16_at(b * B + 80), f16_at(b * B + 82);
        } else if constexpr (T == 12) {
            f16_at(b * B), f16_at(b * B + 2);
        } else if constexpr (T == 39) {
            row[(size_t)(b * B)] = (uint8_t)(120 + rng() % 8);
        } else if constexpr (T == 107) {
            row[(size_t)(b * B + 8)] = (uint8_t)(120 + rng() % 8), row[(size_t)(b * B + 9)] = (uint8_t)(120 + rng() % 8);
        }
    }
    return row;
}

// rows rows of n values; R1 rows a group in the one-column (double-buffered) kernel, R2 in the
// two-column one, both with L lanes a row.
template <uint32_t T, int R1, int R2>
void pipe_case(const std::string& name, int64_t rows, int64_t n, int L) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<uint8_t> W;
    for (int64_t r = 0; r < rows; ++r) {
        const std::vector<uint8_t> row = random_row<T>(n, rng);
        W.insert(W.end(), row.begin(), row.end());
    }
    const uint64_t rb = W.size() / (size_t)rows;
    std::vector<float> X((size_t)n);
    for (float& v : X) v = nd(rng);
    const int wide = ds4::gpu::dot_wide<T>(W.data(), rb);
    std::vector<float> piped((size_t)rows, -1.0f), plain((size_t)rows, -2.0f);
    sim_launch(ds4::gpu::dot_row_blocks(rows, L, R1), 1, ds4::gpu::kDotBlock, [&] {
        ds4_matmul_kernel<1, R1, T>(W.data(), rb, n, rows, X.data(), n, 1, piped.data(), rows, nullptr, L, wide, 1, rows, 0);
    });
    sim_launch(ds4::gpu::dot_row_blocks(rows, L, R2), 1, ds4::gpu::kDotBlock, [&] {
        ds4_matmul_kernel<2, R2, T>(W.data(), rb, n, rows, X.data(), n, 1, plain.data(), rows, nullptr, L, wide, 1, rows, 0);
    });
    bool finite = true;
    for (float v : plain) finite = finite && std::isfinite(v);
    if (!finite || std::memcmp(piped.data(), plain.data(), piped.size() * 4) != 0) {
        std::printf("FAIL %s: the double-buffered walk differs from the plain one%s\n", name.c_str(),
                    finite ? "" : " (or a result is not finite)");
        ++failures;
        return;
    }
    std::printf("ok   %s\n", name.c_str());
}

}  // namespace

int main() {
    // Q8_0 at 32 lanes: 8 lanes' steps of blocks, 11 blocks a lane (rounds of 4, 4, 3 one-row).
    pipe_case<8, 1, 1>("Q8_0, one-row groups, 32 lanes, 11 blocks a lane", 20, 32 * 8 * 11, 32);
    pipe_case<8, 4, 2>("Q8_0, 4-row groups, 64 lanes, 7 blocks a lane", 24, 32 * 16 * 7, 64);
    pipe_case<2, 1, 1>("Q4_0, one-row groups, 32 lanes, 9 blocks a lane", 12, 32 * 32 * 9, 32);
    pipe_case<10, 1, 1>("Q2_K, one-row groups, 32 lanes, 5 blocks a lane", 12, 256 * 4 * 5, 32);
    pipe_case<10, 4, 2>("Q2_K, 4-row groups, 32 lanes, 3 blocks a lane", 16, 256 * 4 * 3, 32);
    pipe_case<12, 1, 1>("Q4_K, one-row groups, 64 lanes, 3 blocks a lane", 12, 256 * 8 * 3, 64);
    pipe_case<39, 1, 1>("MXFP4, one-row groups, 32 lanes, 5 blocks a lane", 12, 32 * 32 * 5, 32);
    pipe_case<107, 4, 2>("ROCmFP2, 4-row groups, 32 lanes, 3 blocks a lane", 16, 32 * 32 * 3, 32);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
