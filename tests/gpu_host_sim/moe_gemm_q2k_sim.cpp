// The routed Q2_K experts' prefill GEMMs (gpu_moe_gemm_q2k.cu) run on the host (sim_runtime.h)
// against the decode kernels of gpu_moe_int8.cu (ds4_moe_gate_up_int8_kernel and
// ds4_moe_down_int8_kernel with 32 lanes, whose bits decode and verify give): every output bit for
// bit, for rows of 3, 8, 9 and 16 blocks of 256 (partial and whole 8-block steps, warps without a
// block), expert row counts that are not a multiple of a tile (gate_up's 16, down's 32), experts
// with 1 to 19 columns (partial 8-column passes), 16-byte and word row loads, and scales of both
// signs. Built twice by tests/engine/test_gpu_kernels_host_sim.py: with the dp4a sub-block
// product (HIP's path) and with -DDS4_MMA_EMULATE, the tensor-core fragments as the CUDA path
// loads them and the mma.sync product as the PTX ISA defines it (gpu_mma_s8.h). Prints one line
// per case; exit status 1 if any differs.
#include "sim_runtime.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/gpu/gpu_int8_columns.cu"
#include "backend/gpu/gpu_moe_gemm_q2k.cu"
#include "backend/gpu/gpu_moe_int8.cu"
#include "int8_sim_common.h"

namespace {

// Q2_K rows (84 bytes a block of 256) with random codes and scale bytes and f16 d, dmin of
// either sign (negative d and dmin make -0 partial sums possible, which a chain must keep).
std::vector<uint8_t> random_q2k(int64_t rows, int64_t n, std::mt19937_64& rng) {
    std::vector<uint8_t> w((size_t)(rows * (n / 256) * 84));
    for (uint8_t& b : w) b = (uint8_t)rng();
    std::uniform_real_distribution<float> f(-0.02f, 0.02f);
    for (size_t b = 0; b < w.size() / 84; ++b) {
        for (int k = 0; k < 2; ++k) {
            const uint16_t h = ds4::f32_to_f16(f(rng));
            std::memcpy(&w[b * 84 + 80 + 2 * k], &h, 2);
        }
    }
    return w;
}

// A plan as gpu_moe_plan.h writes it: expert e's columns [start[e], start[e] + count[e]), the
// chosen experts in `active`, column c of token tok_of[c].
struct Plan {
    std::vector<int32_t> active, n_active, count, start, tok_of;
    int64_t pairs = 0;
};
Plan plan_of(const std::vector<int>& counts, int64_t n_tokens, std::mt19937_64& rng) {
    Plan p;
    p.count.assign(counts.begin(), counts.end());
    p.start.resize(counts.size());
    for (size_t e = 0; e < counts.size(); ++e) {
        p.start[e] = (int32_t)p.pairs;
        p.pairs += counts[e];
        if (counts[e] > 0) p.active.push_back((int32_t)e);
    }
    std::reverse(p.active.begin(), p.active.end());  // slots need not follow expert order
    p.n_active = {(int32_t)p.active.size()};
    for (int64_t c = 0; c < p.pairs; ++c) p.tok_of.push_back((int32_t)(rng() % (uint64_t)n_tokens));
    return p;
}

std::string describe(int64_t n_in, int64_t rows, const std::vector<int>& counts, bool wide) {
    std::string s = std::to_string(n_in / 256) + " blocks a row, " + std::to_string(rows) + " rows, columns";
    for (int c : counts) s += " " + std::to_string(c);
    return s + (wide ? ", 16-byte loads" : ", word loads");
}

// gate_up with the SwiGLU: the GEMM against the decode kernel (2 rows of gate a group).
void gate_up_case(int64_t n_in, int64_t F, const std::vector<int>& counts, bool wide) {
    std::mt19937_64 rng((uint64_t)(n_in * 31 + F * 7 + counts.size()));
    const int64_t n_tokens = 13, experts = (int64_t)counts.size();
    const uint64_t rb = (uint64_t)(n_in / 256) * 84, eb = (uint64_t)F * rb;
    const std::vector<uint8_t> gate = random_q2k(experts * F, n_in, rng), up = random_q2k(experts * F, n_in, rng);
    const Plan p = plan_of(counts, n_tokens, rng);
    const std::vector<float> h = columns_of(n_in, n_tokens, rng);
    const Cols hc = quantise(h, n_in, n_tokens, 1, 0, n_in);
    const float* hd = hc.d(n_tokens * n_in);
    const double clamp = 7.0;
    const unsigned slots = (unsigned)p.active.size();
    std::vector<float> want((size_t)(p.pairs * F), -7.0f), got = want;
    sim_launch(ds4::gpu::dot_row_blocks(F, 32, 2), slots, ds4::gpu::kDotBlock, [&] {
        ds4_moe_gate_up_int8_kernel<2, 1, 10>(gate.data(), up.data(), eb, rb, n_in, hc.q(), hd, p.active.data(),
                                              p.n_active.data(), p.count.data(), p.start.data(), p.tok_of.data(),
                                              n_tokens, F, clamp, want.data(), 32, 1);
    });
    sim_launch((unsigned)((F + 15) / 16), slots, 256, [&] {
        ds4_moe_gate_up_q2k_gemm_kernel(gate.data(), up.data(), eb, rb, n_in, F, hc.q(), hd, p.active.data(),
                                        p.n_active.data(), p.count.data(), p.start.data(), p.tok_of.data(), n_tokens,
                                        clamp, got.data(), wide ? 1 : 0);
    });
    const int64_t bad = first_bit_difference(got, want);
    report(bad < 0, std::string(kTilePath) + ": gate_up, " + describe(n_in, F, counts, wide) + ": the decode kernel's bits",
           bad < 0 ? "" : "column " + std::to_string(bad / F) + " row " + std::to_string(bad % F));
}

void down_case(int64_t F, int64_t E, const std::vector<int>& counts, bool wide) {
    std::mt19937_64 rng((uint64_t)(F * 17 + E * 5 + counts.size()));
    const int64_t experts = (int64_t)counts.size();
    const uint64_t rb = (uint64_t)(F / 256) * 84, eb = (uint64_t)E * rb;
    const std::vector<uint8_t> down = random_q2k(experts * E, F, rng);
    const Plan p = plan_of(counts, 5, rng);
    const std::vector<float> act = columns_of(F, p.pairs, rng);
    const Cols ac = quantise(act, F, p.pairs, 1, 0, F);
    const float* ad = ac.d(p.pairs * F);
    const unsigned slots = (unsigned)p.active.size();
    std::vector<float> want((size_t)(p.pairs * E), -7.0f), got = want;
    sim_launch(ds4::gpu::dot_row_blocks(E, 32, 4), slots, ds4::gpu::kDotBlock, [&] {
        ds4_moe_down_int8_kernel<4, 1, 10>(down.data(), eb, rb, F, ac.q(), ad, p.active.data(), p.n_active.data(),
                                           p.count.data(), p.start.data(), p.pairs, E, want.data(), 32, 1);
    });
    sim_launch((unsigned)((E + 31) / 32), slots, 256, [&] {
        ds4_moe_down_q2k_gemm_kernel(down.data(), eb, rb, F, E, ac.q(), ad, p.active.data(), p.n_active.data(),
                                     p.count.data(), p.start.data(), p.pairs, got.data(), wide ? 1 : 0);
    });
    const int64_t bad = first_bit_difference(got, want);
    report(bad < 0, std::string(kTilePath) + ": down, " + describe(F, E, counts, wide) + ": the decode kernel's bits",
           bad < 0 ? "" : "column " + std::to_string(bad / E) + " row " + std::to_string(bad % E));
}

}  // namespace

// gpu_dequant.h q2k_scale_min_fma (the int8 walks' scales) against q2k_scale_min's products for
// every finite f16 d (as d and as dmin) and every scale byte: the same float, bit for bit except
// a zero's sign (+0 for -0 where d < 0, which no chain can see).
void scale_fma_case() {
    int64_t bad = 0, zeros = 0;
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        if ((h & 0x7C00u) == 0x7C00u) continue;  // inf and NaN
        for (uint32_t sc = 0; sc < 256; ++sc) {
            for (const uint32_t dd : {h, h << 16}) {
                float ml_ref, ml;
                const float dl_ref = ds4::gpu::q2k_scale_min(dd, sc, &ml_ref);
                const float dl = ds4::gpu::q2k_scale_min_fma(ds4::gpu::q2k_scales(dd), sc, &ml);
                for (const auto& [a, b] : {std::pair{dl, dl_ref}, std::pair{ml, ml_ref}}) {
                    if (a == 0.0f && b == 0.0f) ++zeros;
                    else if (std::bit_cast<uint32_t>(a) != std::bit_cast<uint32_t>(b)) ++bad;
                }
            }
        }
    }
    report(bad == 0 && zeros > 0, "q2k_scale_min_fma: every finite f16 d and dmin, every scale byte: the products' bits (" +
                                      std::to_string(bad) + " differ)");
}

int main() {
    scale_fma_case();
    gate_up_case(4096, 40, {3, 0, 9}, true);        // two whole steps; a partial tile of rows
    gate_up_case(2048, 32, {1, 8}, false);          // one whole step, word loads
    gate_up_case(768, 24, {17, 2, 0, 5}, false);    // a partial step (warps 3..7 without a block)
    gate_up_case(2304, 16, {19}, false);            // a whole step and one block more
    down_case(2048, 72, {3, 0, 9}, true);           // one whole step; a partial tile
    down_case(4096, 32, {1, 8}, true);
    down_case(768, 40, {17, 2, 0, 5}, false);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
