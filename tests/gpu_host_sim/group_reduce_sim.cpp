// gpu_dot.h's group_reduce and the strided grid of gpu_matmul_kernels.h's ds4_matmul_kernel run
// on the host (sim_runtime.h, whose 32-lane shuffle takes group_reduce's shuffle path, as CUDA
// and HIP do):
// - group_reduce against the tree's definition written out here (for s = L/2 .. 1: p[x] += p[x +
//   s] for x < s), bit for bit, for groups of 32 to 256 lanes and 1 to 8 sums a lane, over values
//   of mixed magnitudes (so another order gives other bits: the run counts the groups where a
//   left-to-right sum differs and fails if none does);
// - the matmul kernel on a strided grid (fewer blocks than row blocks, each walking b, b + grid,
//   ...; gpu_matmul_kernels.h strided_grid: the one-column kernels) against a block per row block,
//   bit for bit, for Q8_0 (split rows) and F32 rows, one- and four-row groups, and against a
//   float64 product within float noise.
// Prints one line per case; exit status 1 if any fails. tests/engine/test_gpu_kernels_host_sim.py
// builds and runs it.
#include "sim_runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_matmul_kernels.h"

static_assert(DS4_GPU_SHUFFLE32 == 1, "the simulation must take group_reduce's shuffle path");

namespace {

int failures = 0;
int order_sensitive = 0;  // groups where a left-to-right sum differs from the tree

template <int NS>
void reduce_case(int L) {
    const std::string name = "group_reduce L=" + std::to_string(L) + " NS=" + std::to_string(NS);
    std::mt19937_64 rng((uint64_t)L * 131 + NS);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_int_distribution<int> ex(-24, 24);
    const int T = ds4::gpu::kDotBlock, groups = T / L;
    std::vector<float> acc((size_t)T * NS), got((size_t)groups * NS, -1.0f);
    for (float& v : acc) v = std::ldexp(nd(rng), ex(rng));
    sim_launch(1, 1, (unsigned)T, [&] {
        __shared__ float part[NS * ds4::gpu::kDotBlock];
        const ds4::gpu::Lanes ln = ds4::gpu::dot_lanes_of_thread(L);
        const int t = ln.group * L + ln.lane;
        float a[NS], out[NS];
        for (int c = 0; c < NS; ++c) a[c] = acc[(size_t)t * NS + c];
        ds4::gpu::group_reduce<NS>(a, ln, part, out);
        if (ln.lane == 0) {
            for (int c = 0; c < NS; ++c) got[(size_t)ln.group * NS + c] = out[c];
        }
    });
    for (int g = 0; g < groups; ++g) {
        for (int c = 0; c < NS; ++c) {
            std::vector<float> p(L);
            float serial = 0.0f;
            for (int x = 0; x < L; ++x) p[x] = acc[(size_t)(g * L + x) * NS + c], serial += p[x];
            for (int s = L / 2; s > 0; s /= 2) {
                for (int x = 0; x < s; ++x) p[x] = p[x] + p[x + s];
            }
            const float want = p[0], have = got[(size_t)g * NS + c];
            if (std::memcmp(&want, &have, 4) != 0) {
                std::printf("FAIL %s: group %d sum %d is %.9g, the tree gives %.9g\n", name.c_str(), g, c, have, want);
                ++failures;
                return;
            }
            order_sensitive += std::memcmp(&want, &serial, 4) != 0;
        }
    }
    std::printf("ok   %s\n", name.c_str());
}

// n values a row: Q8_0 split rows (codes, then the f16 scales) or F32.
template <uint32_t T>
std::vector<uint8_t> make_rows(std::mt19937_64& rng, int64_t rows, int64_t n, uint64_t* row_bytes,
                               std::vector<double>* dense) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t nb = n / 32;
    *row_bytes = T == 8 ? (uint64_t)nb * 34 : (uint64_t)n * 4;
    std::vector<uint8_t> W((size_t)(rows * *row_bytes));
    dense->assign((size_t)(rows * n), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        uint8_t* row = W.data() + r * *row_bytes;
        for (int64_t i = 0; i < n; ++i) {
            if (T == 8) {
                const int8_t q = (int8_t)(rng() % 255 - 127);
                row[i] = (uint8_t)q;
                (*dense)[(size_t)(r * n + i)] = q;  // times the block's scale below
            } else {
                const float v = nd(rng);
                std::memcpy(row + 4 * i, &v, 4);
                (*dense)[(size_t)(r * n + i)] = v;
            }
        }
        if (T == 8) {
            for (int64_t b = 0; b < nb; ++b) {
                const uint16_t h = ds4::f32_to_f16(0.01f * (1.0f + std::fabs(nd(rng))));
                std::memcpy(row + nb * 32 + 2 * b, &h, 2);
                const double d = ds4::f16_to_f32(h);
                for (int j = 0; j < 32; ++j) (*dense)[(size_t)(r * n + 32 * b + j)] *= d;
            }
        }
    }
    return W;
}

template <int NC, int R, uint32_t T>
void grid_case(const std::string& name, int64_t rows, int64_t n, int L, int ncols, unsigned strided_blocks) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    uint64_t rb = 0;
    std::vector<double> dense;
    const std::vector<uint8_t> W = make_rows<T>(rng, rows, n, &rb, &dense);
    std::vector<float> X((size_t)(n * ncols));
    for (float& v : X) v = nd(rng);
    static_assert(strided_grid(NC), "only the strided kernels walk several row blocks a block");
    const unsigned blocks = ds4::gpu::dot_row_blocks(rows, L, R), gy = (unsigned)((ncols + NC - 1) / NC);
    if (strided_blocks >= blocks) {
        std::printf("FAIL %s: %u strided blocks do not stride over %u row blocks\n", name.c_str(), strided_blocks, blocks);
        ++failures;
        return;
    }
    const int wide = ds4::gpu::dot_wide<T>(W.data(), rb);
    std::vector<float> full((size_t)(rows * ncols), -1.0f), strided((size_t)(rows * ncols), -2.0f);
    auto run = [&](unsigned gx, std::vector<float>& Y) {
        sim_launch(gx, gy, ds4::gpu::kDotBlock, [&] {
            ds4_matmul_kernel<NC, R, T>(W.data(), rb, n, rows, X.data(), n, ncols, Y.data(), rows, nullptr, L, wide, 1,
                                        rows, 0);
        });
    };
    run(blocks, full);
    run(strided_blocks, strided);
    if (std::memcmp(full.data(), strided.data(), full.size() * 4) != 0) {
        std::printf("FAIL %s: the strided grid's outputs differ from a block per row block\n", name.c_str());
        ++failures;
        return;
    }
    for (int c = 0; c < ncols; ++c) {
        for (int64_t r = 0; r < rows; ++r) {
            double want = 0.0, mag = 0.0;
            for (int64_t i = 0; i < n; ++i) {
                want += dense[(size_t)(r * n + i)] * X[(size_t)(c * n + i)];
                mag += std::fabs(dense[(size_t)(r * n + i)] * X[(size_t)(c * n + i)]);
            }
            const double have = full[(size_t)(c * rows + r)];
            if (std::fabs(have - want) > 1e-5 * mag + 1e-30) {
                std::printf("FAIL %s: row %lld column %d is %.9g, float64 gives %.9g\n", name.c_str(), (long long)r, c,
                            have, want);
                ++failures;
                return;
            }
        }
    }
    std::printf("ok   %s\n", name.c_str());
}

}  // namespace

int main() {
    reduce_case<1>(32);
    reduce_case<4>(32);
    reduce_case<1>(64);
    reduce_case<8>(128);
    reduce_case<2>(256);
    grid_case<1, 4, 8>("Q8_0, 4-row groups, 1 column, L=32, 3 of 10 blocks", 300, 512, 32, 1, 3);
    grid_case<1, 1, 8>("Q8_0, 1-row groups, 1 column, L=64, 2 of 19 blocks", 75, 1024, 64, 1, 2);
    grid_case<1, 1, 0>("F32, 1-row groups, 1 column, L=128, 5 of 50 blocks", 100, 384, 128, 1, 5);
    grid_case<1, 4, 0>("F32, 4-row groups, 1 column, L=256, 2 of 9 blocks", 33, 2048, 256, 1, 2);
    if (order_sensitive == 0) {
        std::printf("FAIL the group_reduce cases never told the tree from a left-to-right sum\n");
        ++failures;
    }
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
