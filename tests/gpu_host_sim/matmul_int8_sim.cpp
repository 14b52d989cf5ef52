// The Q8_0 matmul on int8 columns (gpu_matmul_int8.cu, DS4KIT_GPU_INT8=all) and its column
// quantiser (gpu_int8_columns.cu) run on the host (sim_runtime.h) against plain statements of
// what they compute:
// - the quantiser over strided and grouped columns (column c's group g at x + c ldx + g stride):
//   per 32 values d = amax / 127 in float, q = x / d rounded half to even (ties), clamped to
//   +-127, an all-zero block giving d = 0 and q = 0; codes and scales where the kernels read them;
// - the matmul, bit for bit the order docs/gpu-backend.md states (8 chains, chain k blocks k,
//   k + 8, ..., each acc = fma(dw, dx * isum, acc) in block order from 0 with isum the block's
//   exact integer dot; then the chain sums in the tree p[x] + p[x + s], s = 4, 2, 1), and within
//   2e-6 of the float64 dot of the dequantised row and column (relative to the sum of |w x|), for
//   rows of 1 to 256 blocks (chains without blocks, chains of unequal length), on a block per row
//   block and on a strided grid of 1 and 3 blocks;
// - every column the same bits whatever the call: 1, 3, 8 and 13 columns, one-row and R-row
//   groups, the wide calls' 4 x 4 (verify == decode == prefill at the kernel);
// - a grouped call (rows of group g on column group g) bit for bit each group's own call;
// - the set kernel (matmul_shared_x): each matrix bit for bit its lone launch.
// Prints one line per case; exit status 1 if any differs. tests/engine/test_gpu_kernels_host_sim.py
// builds and runs it.
#include "sim_runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_int8_columns.cu"
#include "backend/gpu/gpu_matmul_int8.cu"
#include "int8_sim_common.h"

namespace {

// The quantiser as tests/reference/ds4_ref_int8.py states it, for one block of 32 values.
void quantise_block(const float* v, int8_t* q, float* d) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    *d = amax / 127.0f;
    for (int j = 0; j < 32; ++j) {
        const float r = *d == 0.0f ? 0.0f : std::nearbyint(v[j] / *d);  // the default mode: half to even
        q[j] = (int8_t)std::fmax(-127.0f, std::fmin(127.0f, r));
    }
}

void quantiser_case() {
    const int64_t columns = 3, groups = 4, n = 96, stride = 100, ldx = groups * stride + 7;
    std::mt19937_64 rng(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x((size_t)(columns * ldx));
    for (float& v : x) v = nd(rng);
    // Column 1, group 2: a block whose amax is 127 (d = 1) with ties at +-2.5 and 0.5, a block of zeros.
    float* t = &x[(size_t)(1 * ldx + 2 * stride)];
    for (int j = 0; j < 32; ++j) t[j] = 0.25f * (float)(j - 16);
    t[0] = 127.0f, t[1] = 2.5f, t[2] = -2.5f, t[3] = 0.5f, t[4] = 1.5f;
    for (int j = 32; j < 64; ++j) t[j] = 0.0f;
    const Cols c = quantise(x, ldx, columns, groups, stride, n);
    const int64_t values = columns * groups * n;
    bool ok = true;
    std::string why;
    for (int64_t k = 0; k < columns * groups && ok; ++k) {
        const float* src = &x[(size_t)((k / groups) * ldx + (k % groups) * stride)];
        for (int64_t b = 0; b < n / 32 && ok; ++b) {
            int8_t q[32];
            float d;
            quantise_block(src + 32 * b, q, &d);
            const int64_t at = k * n + 32 * b;
            if (std::memcmp(q, c.q() + at, 32) != 0 || std::memcmp(&d, c.d(values) + at / 32, 4) != 0) {
                ok = false;
                why = "column " + std::to_string(k / groups) + " group " + std::to_string(k % groups) + " block " +
                      std::to_string(b);
            }
        }
    }
    const int8_t* tq = c.q() + (1 * groups + 2) * n;
    ok = ok && tq[0] == 127 && tq[1] == 2 && tq[2] == -2 && tq[3] == 0 && tq[4] == 2;  // ties to even
    ok = ok && c.d(values)[((1 * groups + 2) * n + 32) / 32] == 0.0f && tq[40] == 0;
    report(ok, "quantiser: 3 columns of 4 groups at a stride, ties to even, a zero block", why);
}

// The order the kernels promise, written out serially for row r and int8 column k.
float serial_dot(const Q8Rows& w, int64_t r, const Cols& c, int64_t values, int64_t k) {
    const int64_t nb = w.n / 32;
    float p[8];
    for (int ch = 0; ch < 8; ++ch) {
        float acc = 0.0f;
        for (int64_t b = ch; b < nb; b += 8) {
            int isum = 0;
            for (int j = 0; j < 32; ++j) isum += (int)w.code(r, 32 * b + j) * (int)c.q()[k * w.n + 32 * b + j];
            const float dx = c.d(values)[(k * w.n) / 32 + b];
            acc = std::fmaf(w.scale(r, b), dx * (float)isum, acc);
        }
        p[ch] = acc;
    }
    for (int s = 4; s >= 1; s /= 2) {
        for (int x = 0; x < s; ++x) p[x] = p[x] + p[x + s];
    }
    return p[0];
}

void order_case(int64_t rows, int64_t n, int wide, unsigned gx = 0) {
    wide = wide && ds4::gpu::dot_wide_at(ds4::gpu::kInt8LoadBytes, nullptr, (uint64_t)(n / 32 * 34));
    const std::string name = std::to_string(rows) + " rows of " + std::to_string(n) + ", " +
                             (wide ? "word" : "byte") + " loads" +
                             (gx ? ", a strided grid of " + std::to_string(gx) : std::string(""));
    std::mt19937_64 rng((uint64_t)(rows * 131 + n * 7 + wide));
    const Q8Rows w = random_q8(rows, n, rng);
    const std::vector<float> x1 = columns_of(n, 1, rng);
    const Cols c = quantise(x1, n, 1, 1, 0, n);
    const std::vector<float> y = run<1, 1>(w, c, 1, wide, 0, 1, gx);
    bool bits = true, close = true;
    double worst = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
        const float got = y[(size_t)r];
        const float want = serial_dot(w, r, c, n, 0);
        bits = bits && std::memcmp(&got, &want, 4) == 0;
        double dot = 0.0, mag = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            const double wi = (double)w.scale(r, i / 32) * w.code(r, i);
            const double xi = (double)((float)c.q()[i] * c.d(n)[i / 32]);
            dot += wi * xi, mag += std::fabs(wi * xi);
        }
        const double err = std::fabs(got - dot) / (mag > 0 ? mag : 1.0);
        worst = std::fmax(worst, err);
        close = close && err < 2e-6;
    }
    report(bits, name + ": the stated order, bit for bit");
    report(close, name + ": against the float64 dot", "worst " + std::to_string(worst));
}

void invariance_case() {
    const int64_t rows = 70, n = 512, ncols = 13;
    std::mt19937_64 rng(5);
    const Q8Rows w = random_q8(rows, n, rng);
    const std::vector<float> x = columns_of(n, ncols, rng);
    const Cols c13 = quantise(x, n, ncols, 1, 0, n);
    // Column k alone, as decode computes it.
    std::vector<float> want((size_t)(ncols * rows));
    for (int64_t k = 0; k < ncols; ++k) {
        const std::vector<float> xk(x.begin() + k * n, x.begin() + (k + 1) * n);
        const std::vector<float> yk = run<1, 1>(w, quantise(xk, n, 1, 1, 0, n), 1, 1);
        std::copy(yk.begin(), yk.end(), want.begin() + k * rows);
    }
    auto first = [&](const std::vector<float>& y, int64_t cols) {
        return std::vector<float>(y.begin(), y.begin() + cols * rows);
    };
    const Cols c3 = quantise(x, n, 3, 1, 0, n), c8 = quantise(x, n, 8, 1, 0, n);
    report(same_bits(run<1, 4>(w, quantise(std::vector<float>(x.begin(), x.begin() + n), n, 1, 1, 0, n), 1, 1),
                     first(want, 1)),
           "1 column in 4-row groups: the one-row bits");
    report(same_bits(run<4, 1>(w, c3, 3, 1), first(want, 3)), "3 columns (4 a pass): each column's decode bits");
    report(same_bits(run<4, 2>(w, c3, 3, 1), first(want, 3)), "3 columns in 2-row groups: each column's decode bits");
    report(same_bits(run<8, 2>(w, c8, 8, 1), first(want, 8)), "8 columns in 2-row groups: each column's decode bits");
    report(same_bits(run<4, 4>(w, c13, 13, 1), want), "13 columns, the wide calls' 4 x 4: each column's decode bits");
    report(same_bits(run<8, 1>(w, c8, 8, 0), first(want, 8)), "8 columns with byte loads: the word loads' bits");
}

void grouped_case() {
    const int64_t groups = 4, group_rows = 16, n = 256, ncols = 3, stride = n + 32, ldx = groups * stride;
    std::mt19937_64 rng(9);
    const Q8Rows w = random_q8(groups * group_rows, n, rng);
    const std::vector<float> x = columns_of(ldx, ncols, rng);
    const Cols c = quantise(x, ldx, ncols, groups, stride, n);
    const std::vector<float> y = run<4, 1>(w, c, ncols, 1, group_rows, groups);
    bool ok = true;
    for (int64_t g = 0; g < groups && ok; ++g) {
        Q8Rows wg{group_rows, n, w.row_bytes,
                  std::vector<uint8_t>(w.bytes.begin() + g * group_rows * w.row_bytes,
                                       w.bytes.begin() + (g + 1) * group_rows * w.row_bytes)};
        std::vector<float> xg((size_t)(ncols * n));
        for (int64_t k = 0; k < ncols; ++k) {
            std::copy(x.begin() + k * ldx + g * stride, x.begin() + k * ldx + g * stride + n, xg.begin() + k * n);
        }
        const std::vector<float> yg = run<4, 1>(wg, quantise(xg, n, ncols, 1, 0, n), ncols, 1);
        for (int64_t k = 0; k < ncols; ++k) {
            ok = ok && std::memcmp(&y[(size_t)(k * w.rows + g * group_rows)], &yg[(size_t)(k * group_rows)],
                                   4 * group_rows) == 0;
        }
    }
    report(ok, "grouped call (4 groups of 16 rows, 3 columns): each group's own call, bit for bit");
}

template <int NC>
void set_case(const std::vector<int64_t>& parts, int64_t n, int ncols) {
    const std::string name = "set of " + std::to_string(parts.size()) + " matrices, " + std::to_string(ncols) +
                             " column(s): each its lone launch";
    std::mt19937_64 rng((uint64_t)(parts.size() * 100 + ncols));
    const std::vector<float> x = columns_of(n, ncols, rng);
    const Cols c = quantise(x, n, ncols, 1, 0, n);
    const int64_t values = ncols * n;
    std::vector<Q8Rows> W;
    std::vector<std::vector<float>> set(parts.size());
    MatmulSetArgs a{};
    a.n_parts = (int)parts.size();
    unsigned blocks = 0;
    for (size_t p = 0; p < parts.size(); ++p) W.push_back(random_q8(parts[p], n, rng));
    for (size_t p = 0; p < parts.size(); ++p) {
        set[p].assign((size_t)(parts[p] * ncols), -2.0f);
        a.part[p] = MatmulSetPart{W[p].bytes.data(), W[p].row_bytes, W[p].rows, set[p].data(), W[p].rows,
                                  ds4::gpu::kInt8RowLanes,
                                  ds4::gpu::dot_wide_at(ds4::gpu::kInt8LoadBytes, W[p].bytes.data(), W[p].row_bytes),
                                  blocks};
        blocks += ds4::gpu::dot_row_blocks(W[p].rows, ds4::gpu::kInt8RowLanes, 1);
    }
    sim_launch(blocks, (unsigned)((ncols + NC - 1) / NC), ds4::gpu::kDotBlock,
               [&] { ds4_matmul_set_int8_kernel<NC>(a, n, c.q(), c.d(values), ncols); });
    bool ok = true;
    for (size_t p = 0; p < parts.size(); ++p) ok = ok && same_bits(run<NC, 1>(W[p], c, ncols, 1), set[p]);
    report(ok, name);
}

}  // namespace

int main() {
    quantiser_case();
    order_case(37, 1024, 1);     // q_b's rows: 32 blocks, 4 a chain
    order_case(20, 4096, 1);     // 128 blocks
    order_case(19, 8192, 1, 3);  // wo_b's rows: 256 blocks; 3 blocks striding over 3 row blocks
    order_case(300, 256, 1, 1);  // one block a chain; one block walking all 38 row blocks
    order_case(9, 96, 0);        // 3 blocks: five chains have none
    order_case(11, 320, 1);      // 10 blocks: chains 0 and 1 of 2, the others of 1
    order_case(13, 1056, 0);     // 33 blocks: chain 0 of 5
    invariance_case();
    grouped_case();
    set_case<1>({40, 9}, 512, 1);
    set_case<4>({64, 33, 17}, 1024, 3);
    set_case<8>({12, 40, 9, 65, 3, 30}, 256, 8);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
