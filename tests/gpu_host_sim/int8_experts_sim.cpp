// The int8-column expert kernels (gpu_moe_int8.cu, gpu_int8.h, gpu_int8_columns.cu; the GPU's default) run on
// the host (sim_runtime.h) against plain statements of what they compute:
// - the column quantiser: per 32 values d = amax / 127 in float, q = x / d rounded half to even
//   (ties checked), an all-zero block giving d = 0 and q = 0 (tests/reference/ds4_ref_int8.py);
// - gate_up and down on Q2_K rows (ggml's dequantize_row_q2_K, written out here) against int8
//   columns: each output within 2e-6 of the float64 dot of the dequantised row with the
//   dequantised column (relative to the sum of |w x|), gate_up through the clamped SwiGLU;
// - a token's output bit for bit the same whether its expert has one column in the call or
//   three (verify == decode at the kernel);
// - the shared expert's SwiGLU quantiser (its matmuls are gpu_matmul_int8.cu's: matmul_int8_sim,
//   gemm_int8_sim) bit for bit the column quantiser of the clamped SwiGLU.
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
#include "backend/gpu/gpu_moe_int8.cu"

namespace {

int failures = 0;

void report(bool ok, const std::string& name, const std::string& why = "") {
    std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name.c_str(), ok || why.empty() ? "" : ": ", ok ? "" : why.c_str());
    failures += !ok;
}

float half_to_float(uint16_t h) { return ds4::f16_to_f32(h); }

// ggml's Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin (f16).
std::vector<double> dequant_q2k_row(const uint8_t* row, int64_t n) {
    std::vector<double> w((size_t)n);
    for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = row + b * 84;
        uint16_t dh, mh;
        std::memcpy(&dh, blk + 80, 2);
        std::memcpy(&mh, blk + 82, 2);
        const double d = half_to_float(dh), dmin = half_to_float(mh);
        for (int l = 0; l < 256; ++l) {
            const int half = l / 128, j = (l % 128) / 32, ii = l % 32;
            const int code = (blk[16 + 32 * half + ii] >> (2 * j)) & 3;
            const uint8_t sc = blk[8 * half + 2 * j + ii / 16];
            // As the engine decodes it: dl and ml rounded to float first.
            const float dl = (float)d * (float)(sc & 15), ml = (float)dmin * (float)(sc >> 4);
            w[(size_t)(b * 256 + l)] = (double)dl * code - (double)ml;
        }
    }
    return w;
}

std::vector<uint8_t> random_q2k(int64_t rows, int64_t n, std::mt19937_64& rng) {
    std::vector<uint8_t> w((size_t)(rows * (n / 256) * 84));
    for (uint8_t& b : w) b = (uint8_t)rng();
    std::uniform_real_distribution<float> f(0.001f, 0.02f);
    for (size_t b = 0; b < w.size() / 84; ++b) {
        for (int k = 0; k < 2; ++k) {
            const uint16_t h = ds4::f32_to_f16(f(rng));
            std::memcpy(&w[b * 84 + 80 + 2 * k], &h, 2);
        }
    }
    return w;
}

// Columns of n values quantised by the kernel: codes then scales, as the launcher lays them.
struct Cols {
    std::vector<int8_t> q;
    std::vector<float> d;
};
Cols quantise(const std::vector<float>& x) {
    const int64_t values = (int64_t)x.size();
    Cols c{std::vector<int8_t>(x.size()), std::vector<float>((size_t)(values / 32))};
    sim_launch((unsigned)((values + 255) / 256), 1, 256,
               [&] { ds4_int8_columns_kernel(x.data(), values, 1, 0, values, values, c.q.data(), c.d.data()); });
    return c;
}
std::vector<double> dequant_cols(const Cols& c) {
    std::vector<double> x(c.q.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = (double)((float)c.q[i] * c.d[i / 32]);
    return x;
}

void quantiser_case() {
    std::mt19937_64 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(32 * 6);
    for (float& v : x) v = nd(rng);
    for (int j = 0; j < 32; ++j) x[32 + j] = 0.0f;  // block 1: zeros
    // Block 2: amax 127 (d = 1), ties 2.5 -> 2, 3.5 -> 4, -0.5 -> -0, 126.5 -> 126.
    for (int j = 0; j < 32; ++j) x[64 + j] = (float)(j % 7) - 3.0f;
    x[64] = 127.0f, x[65] = 2.5f, x[66] = 3.5f, x[67] = -0.5f, x[68] = 126.5f;
    const Cols c = quantise(x);
    bool ok = true;
    std::string why;
    for (int b = 0; b < 6 && ok; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
        const float d = amax / 127.0f;
        if (std::memcmp(&d, &c.d[b], 4) != 0) ok = false, why = "scale of block " + std::to_string(b);
        for (int j = 0; j < 32 && ok; ++j) {
            const float r = d == 0.0f ? 0.0f : std::nearbyint(x[32 * b + j] / d);
            if ((int)c.q[32 * b + j] != (int)std::clamp(r, -127.0f, 127.0f)) ok = false, why = "code " + std::to_string(32 * b + j);
        }
    }
    ok = ok && c.q[65] == 2 && c.q[66] == 4 && c.q[67] == 0 && c.q[68] == 126 && c.d[1] == 0.0f;
    report(ok, "int8 columns: amax / 127, half to even, a zero block", why);
}

// Expert 2 has the columns of tokens 0 and (with `three`) 2 and 3; expert 0 the column of token 1.
struct Routing {
    std::vector<int32_t> active, n_active, count, start, tok_of;
    explicit Routing(bool three) {
        active = {0, 2}, n_active = {2};
        if (three) count = {1, 0, 3}, start = {0, 0, 1}, tok_of = {1, 0, 2, 3};
        else count = {1, 0, 1}, start = {0, 0, 1}, tok_of = {1, 0};
    }
};

double swiglu(double g, double u, double c) {
    g = std::min(g, c);
    u = std::clamp(u, -c, c);
    return g / (1.0 + std::exp(-g)) * u;
}

template <int RH>
void gate_up_case(const std::string& name, int64_t n_in, int64_t F, int L, bool wide) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const uint64_t rb = (uint64_t)(n_in / 256) * 84, eb = (uint64_t)F * rb;
    const std::vector<uint8_t> gate = random_q2k(3 * F, n_in, rng), up = random_q2k(3 * F, n_in, rng);
    std::vector<float> h((size_t)(4 * n_in));
    for (float& v : h) v = nd(rng);
    const Cols hc = quantise(h);
    const std::vector<double> hx = dequant_cols(hc);
    const double clamp = 10.0;
    std::vector<std::vector<float>> act(2);
    for (int three = 0; three < 2; ++three) {
        Routing rt(three != 0);
        const int64_t cols = three ? 4 : 2;
        act[three].assign((size_t)(cols * F), -1.0f);
        sim_launch(ds4::gpu::dot_row_blocks(F, L, RH), 2, ds4::gpu::kDotBlock, [&] {
            ds4_moe_gate_up_int8_kernel<RH, 1, 10>(gate.data(), up.data(), eb, rb, n_in, hc.q.data(), hc.d.data(),
                                                rt.active.data(), rt.n_active.data(), rt.count.data(), rt.start.data(),
                                                rt.tok_of.data(), cols, F, clamp, act[three].data(), L, wide);
        });
    }
    // Column 0: token 1 on expert 0; column 1: token 0 on expert 2.
    double worst = 0.0;
    for (int col = 0; col < 2; ++col) {
        const int64_t e = col == 0 ? 0 : 2, tok = col == 0 ? 1 : 0;
        for (int64_t r = 0; r < F; ++r) {
            const std::vector<double> g = dequant_q2k_row(gate.data() + e * eb + r * rb, n_in);
            const std::vector<double> u = dequant_q2k_row(up.data() + e * eb + r * rb, n_in);
            double gd = 0, ud = 0, gs = 0, us = 0;
            for (int64_t j = 0; j < n_in; ++j) {
                const double xv = hx[(size_t)(tok * n_in + j)];
                gd += g[j] * xv, ud += u[j] * xv, gs += std::fabs(g[j] * xv), us += std::fabs(u[j] * xv);
            }
            // The kernel's act from its own gate and up sums must match the oracle's: compare
            // through the SwiGLU's derivative bound, about |u| + |g| per unit of error.
            const double want = swiglu(gd, ud, clamp), got = act[0][(size_t)(col * F + r)];
            const double scale = (std::fabs(ud) + std::fabs(gd) + 1.0) * (gs + us);
            worst = std::max(worst, std::fabs(got - want) / scale);
        }
    }
    bool same = std::memcmp(act[0].data(), act[1].data() + 0, (size_t)F * 4) == 0 &&
                std::memcmp(act[0].data() + F, act[1].data() + F, (size_t)F * 4) == 0;
    report(worst < 2e-6, name + ": against the float64 dot", "relative error " + std::to_string(worst));
    report(same, name + ": the same bits with 1 and 3 columns on the expert");
}

template <int R>
void down_case(const std::string& name, int64_t F, int64_t E, int L, bool wide) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const uint64_t rb = (uint64_t)(F / 256) * 84, eb = (uint64_t)E * rb;
    const std::vector<uint8_t> down = random_q2k(3 * E, F, rng);
    std::vector<float> act((size_t)(4 * F));
    for (float& v : act) v = nd(rng);
    const Cols ac = quantise(act);
    const std::vector<double> ax = dequant_cols(ac);
    std::vector<std::vector<float>> out(2);
    for (int three = 0; three < 2; ++three) {
        Routing rt(three != 0);
        const int64_t cols = three ? 4 : 2;
        out[three].assign((size_t)(cols * E), -1.0f);
        sim_launch(ds4::gpu::dot_row_blocks(E, L, R), 2, ds4::gpu::kDotBlock, [&] {
            ds4_moe_down_int8_kernel<R, 1, 10>(down.data(), eb, rb, F, ac.q.data(), ac.d.data(), rt.active.data(),
                                            rt.n_active.data(), rt.count.data(), rt.start.data(), cols, E,
                                            out[three].data(), L, wide);
        });
    }
    double worst = 0.0;
    for (int col = 0; col < 2; ++col) {
        const int64_t e = col == 0 ? 0 : 2;
        for (int64_t r = 0; r < E; ++r) {
            const std::vector<double> w = dequant_q2k_row(down.data() + e * eb + r * rb, F);
            double want = 0, mag = 0;
            for (int64_t j = 0; j < F; ++j) want += w[j] * ax[(size_t)(col * F + j)], mag += std::fabs(w[j] * ax[(size_t)(col * F + j)]);
            worst = std::max(worst, std::fabs(out[0][(size_t)(col * E + r)] - want) / mag);
        }
    }
    bool same = std::memcmp(out[0].data(), out[1].data(), (size_t)(2 * E) * 4) == 0;
    report(worst < 2e-6, name + ": against the float64 dot", "relative error " + std::to_string(worst));
    report(same, name + ": the same bits with 1 and 3 columns on the expert");
}

// The shared expert's SwiGLU quantiser (its gate and up are the Q8_0 matmuls', checked by
// matmul_int8_sim and gemm_int8_sim): codes and scales bit for bit the column quantiser's of the
// clamped SwiGLU of each pair, which stays within float rounding of the double statement; values
// past the clamp on both sides, a block of zeros, a partial last quantiser block.
void swiglu_columns_case() {
    std::mt19937_64 rng(11);
    std::normal_distribution<float> nd(0.0f, 6.0f);
    const int64_t values = 32 * 21;  // 2.6 quantiser blocks
    std::vector<float> gate((size_t)values), up((size_t)values), v((size_t)values);
    for (float& x : gate) x = nd(rng);
    for (float& x : up) x = nd(rng);
    for (int j = 0; j < 32; ++j) gate[(size_t)(64 + j)] = 0.0f;  // block 2: SwiGLU zeros
    const double clamp = 7.0;
    double worst = 0.0;
    for (int64_t i = 0; i < values; ++i) {
        v[(size_t)i] = clamped_swiglu(gate[(size_t)i], up[(size_t)i], clamp);
        const double want = swiglu(gate[(size_t)i], up[(size_t)i], clamp);
        worst = std::max(worst, std::fabs(v[(size_t)i] - want) / (std::fabs(want) + 1e-30));
    }
    const Cols want = quantise(v);
    Cols got{std::vector<int8_t>((size_t)values, 99), std::vector<float>((size_t)(values / 32), -1.0f)};
    sim_launch((unsigned)((values + 255) / 256), 1, 256, [&] {
        ds4_swiglu_int8_columns_kernel(gate.data(), up.data(), values, clamp, got.q.data(), got.d.data());
    });
    const bool same = std::memcmp(want.q.data(), got.q.data(), (size_t)values) == 0 &&
                      std::memcmp(want.d.data(), got.d.data(), want.d.size() * 4) == 0;
    report(same && worst < 1e-6, "the shared expert's SwiGLU int8 columns: the quantiser's of the SwiGLU",
           same ? "SwiGLU relative error " + std::to_string(worst) : "codes or scales differ");
}

}  // namespace

int main() {
    quantiser_case();
    gate_up_case<2>("Q2_K gate_up, 2 rows of gate a group, 32 lanes, word loads", 512, 40, 32, true);
    gate_up_case<1>("Q2_K gate_up, one row of each a group, 64 lanes, byte loads", 1024, 24, 64, false);
    down_case<4>("Q2_K down, 4-row groups, 32 lanes, word loads", 512, 36, 32, true);
    down_case<1>("Q2_K down, one-row groups, 64 lanes, byte loads", 1024, 20, 64, false);
    swiglu_columns_case();
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
