// gpu_matmul.cu's set kernel (Backend::matmul_shared_x on the GPU) run on the host
// (sim_runtime.h) against the lone matmul kernel it stands in for: every matrix of a set must
// come out bit for bit as its own launch computes it, for F32, F16 and Q8_0 rows, matrices of
// different row counts (not multiples of a block's rows) and lane counts, 2 to 6 matrices a
// set, and 1, 3 and 8 columns (one column on a strided grid of a third of the set's blocks).
// Prints one line per case; exit status 1 if any differs.
// tests/engine/test_gpu_kernels_host_sim.py builds and runs it.
#include "sim_runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_matmul_kernels.h"

namespace {

int failures = 0;

struct Part {
    int64_t rows;
    int L;
};

// Bytes of a row of n values of type T (Q8_0: 32 codes and a 2-byte scale a block).
uint64_t row_bytes_of(uint32_t type, int64_t n) { return type == 0 ? 4 * n : type == 1 ? 2 * n : (n / 32) * 34; }

template <int NC, uint32_t T>
void set_case(const std::string& name, const std::vector<Part>& parts, int64_t n, int ncols) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const uint64_t rb = row_bytes_of(T, n);
    std::vector<std::vector<uint8_t>> W(parts.size());
    for (size_t p = 0; p < parts.size(); ++p) {
        W[p].resize((size_t)(parts[p].rows * rb));
        if (T == 0) {
            for (size_t i = 0; i < W[p].size() / 4; ++i) { const float v = nd(rng); std::memcpy(&W[p][4 * i], &v, 4); }
        } else if (T == 1) {
            for (size_t i = 0; i < W[p].size() / 2; ++i) { const uint16_t h = ds4::f32_to_f16(nd(rng)); std::memcpy(&W[p][2 * i], &h, 2); }
        } else {
            for (uint8_t& b : W[p]) b = (uint8_t)rng();
            // Finite scales: the split layout's scales follow each row's codes (gpu_dequant.h).
            for (int64_t r = 0; r < parts[p].rows; ++r) {
                for (int64_t b = 0; b < n / 32; ++b) {
                    const uint16_t h = ds4::f32_to_f16(0.01f * (1.0f + std::fabs(nd(rng))));
                    std::memcpy(&W[p][r * rb + (n / 32) * 32 + 2 * b], &h, 2);
                }
            }
        }
    }
    std::vector<float> X((size_t)(n * ncols));
    for (float& v : X) v = nd(rng);
    const unsigned gy = (unsigned)((ncols + NC - 1) / NC);
    MatmulSetArgs a{};
    a.n_parts = (int)parts.size();
    std::vector<std::vector<float>> lone(parts.size()), set(parts.size());
    unsigned blocks = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
        const int64_t rows = parts[p].rows;
        const int L = parts[p].L;
        const int wide = ds4::gpu::dot_wide<T>(W[p].data(), rb);
        lone[p].assign((size_t)(rows * ncols), -1.0f);
        set[p].assign((size_t)(rows * ncols), -2.0f);
        const unsigned nb = ds4::gpu::dot_row_blocks(rows, L, 1);
        sim_launch(nb, gy, ds4::gpu::kDotBlock, [&] {
            ds4_matmul_kernel<NC, 1, T>(W[p].data(), rb, n, rows, X.data(), n, ncols, lone[p].data(), rows, nullptr, L,
                                        wide, 1, rows, 0);
        });
        a.part[p] = MatmulSetPart{W[p].data(), rb, rows, set[p].data(), rows, L, wide, blocks};
        blocks += nb;
    }
    a.blocks = blocks;
    // One-column sets run a strided grid (gpu_matmul_kernels.h strided_grid): launch fewer blocks
    // than the set has, so each walks several of them, as one wave does on a large set.
    const unsigned gx = strided_grid(NC) ? (blocks + 2) / 3 : blocks;
    sim_launch(gx, gy, ds4::gpu::kDotBlock,
               [&] { ds4_matmul_set_kernel<NC, T>(a, n, X.data(), n, ncols, nullptr, 1); });
    for (size_t p = 0; p < parts.size(); ++p) {
        if (std::memcmp(lone[p].data(), set[p].data(), lone[p].size() * 4) != 0) {
            std::printf("FAIL %s: matrix %zu differs from its lone launch\n", name.c_str(), p);
            ++failures;
            return;
        }
    }
    std::printf("ok   %s\n", name.c_str());
}

}  // namespace

int main() {
    const std::vector<Part> two = {{100, 64}, {37, 32}};
    const std::vector<Part> six = {{64, 256}, {130, 64}, {9, 32}, {256, 128}, {33, 64}, {70, 32}};
    set_case<1, 0>("F32, 2 matrices, 1 column", two, 512, 1);
    set_case<1, 1>("F16, 6 matrices, 1 column", six, 1024, 1);
    set_case<4, 1>("F16, 2 matrices, 3 columns", two, 768, 3);
    set_case<8, 1>("F16, 6 matrices, 8 columns", six, 512, 8);
    set_case<1, 8>("Q8_0, 2 matrices, 1 column", two, 1024, 1);
    set_case<8, 8>("Q8_0, 6 matrices, 8 columns", six, 512, 8);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
