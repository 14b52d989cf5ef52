// gpu_indexer.cu's kernels run on the host (sim_runtime.h) against plain statements of what they
// compute: the scores against the CPU backend's formula (per row, the heads' attn_dot in order),
// bit for bit; the selection against a sort by (score descending, row ascending), on score
// patterns a GPU run rarely meets: exact ties at the threshold (ReLU'd heads give many zeros),
// -0 beside +0, all equal, runs of rows per thread (n_c > 256), several tokens in one launch.
// Prints one line per case; exit status 1 if any differs. tests/engine/test_gpu_kernels_host_sim.py
// builds and runs it.
#include "sim_runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_indexer.cu"

namespace {

int failures = 0;

void report(const std::string& name, bool ok, const std::string& detail = "") {
    std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.empty() ? "" : ": ", detail.c_str());
    if (!ok) ++failures;
}

std::vector<int32_t> reference_topk(const double* s, int64_t n_c, int64_t top_k) {
    std::vector<int32_t> rows((size_t)n_c);
    for (int64_t c = 0; c < n_c; ++c) rows[(size_t)c] = (int32_t)c;
    if (n_c <= top_k) return rows;
    std::stable_sort(rows.begin(), rows.end(), [&](int32_t a, int32_t b) { return s[a] > s[b]; });
    rows.resize((size_t)top_k);
    std::sort(rows.begin(), rows.end());
    return rows;
}

// n tokens at positions p0 .. p0 + n - 1 (each sees (p + 1) / 4 rows), scores [n][ld].
void topk_case(const std::string& name, int64_t p0, int64_t n, int64_t top_k, bool via_base,
               const std::function<double(std::mt19937_64&, int64_t)>& score) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    const int64_t ld = (p0 + n) / 4 + 3;
    std::vector<double> s((size_t)(n * ld), 1e300);  // past a token's rows: never read
    for (int64_t i = 0; i < n; ++i) {
        const int64_t n_c = (p0 + i + 1) / 4;
        for (int64_t c = 0; c < n_c; ++c) s[(size_t)(i * ld + c)] = score(rng, c);
    }
    std::vector<int32_t> sel((size_t)(n * top_k), -7);
    int64_t base_word = p0 - 5;
    const ds4::gpu::StepPos pos = via_base ? ds4::gpu::StepPos{5, &base_word} : ds4::gpu::absolute_pos(p0);
    sim_launch((unsigned)n, 1, kThreads, [&] { ds4_indexer_topk_kernel(pos, top_k, s.data(), ld, sel.data()); });
    for (int64_t i = 0; i < n; ++i) {
        const int64_t n_c = (p0 + i + 1) / 4;
        const std::vector<int32_t> want = reference_topk(s.data() + i * ld, n_c, top_k);
        for (size_t k = 0; k < want.size(); ++k) {
            if (sel[(size_t)(i * top_k) + k] != want[k]) {
                report(name, false, "token " + std::to_string(i) + " (n_c " + std::to_string(n_c) + ") entry " +
                                        std::to_string(k) + ": " + std::to_string(sel[(size_t)(i * top_k) + k]) +
                                        " instead of " + std::to_string(want[k]));
                return;
            }
        }
    }
    report(name, true);
}

uint16_t f16_bits(float x) { return __builtin_bit_cast(uint16_t, (_Float16)x); }

void scores_case(const std::string& name, int64_t p0, int64_t n, int64_t n_head, int64_t d, int64_t top_k) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> g(0.0f, 1.0f);
    const int64_t ld = (p0 + n) / 4 + 5;
    std::vector<uint16_t> rows((size_t)(ld * d));
    for (uint16_t& r : rows) r = f16_bits(g(rng));
    std::vector<float> q((size_t)(n * n_head * d)), w((size_t)(n * n_head));
    for (float& v : q) v = g(rng);
    for (float& v : w) v = g(rng);
    std::vector<double> got((size_t)(n * ld), -1.0);
    const ds4::gpu::StepPos pos = ds4::gpu::absolute_pos(p0);
    const unsigned gx = (unsigned)((ld + kScoreRows - 1) / kScoreRows);
    sim_launch(gx, (unsigned)n, kThreads, [&] {
        ds4_indexer_scores_kernel(rows.data(), pos, q.data(), w.data(), n, n_head, d, top_k, got.data(), ld);
    });
    for (int64_t i = 0; i < n; ++i) {
        const int64_t n_c = (p0 + i + 1) / 4;
        if (n_c <= top_k) continue;
        for (int64_t c = 0; c < n_c; ++c) {
            const uint16_t* row = rows.data() + c * d;
            double acc = 0.0;
            for (int64_t h = 0; h < n_head; ++h) {
                const double dot = ds4::gpu::attn_dot(
                    q.data() + (i * n_head + h) * d, [row](int64_t j) { return (double)ds4::f16_to_f32(row[j]); }, d);
                acc += (double)w[(size_t)(i * n_head + h)] * ds4::num::max_f64(dot, 0.0);
            }
            if (__builtin_bit_cast(uint64_t, acc) != __builtin_bit_cast(uint64_t, got[(size_t)(i * ld + c)])) {
                report(name, false, "token " + std::to_string(i) + " row " + std::to_string(c) + ": " +
                                        std::to_string(got[(size_t)(i * ld + c)]) + " instead of " +
                                        std::to_string(acc));
                return;
            }
        }
    }
    report(name, true);
}

}  // namespace

int main() {
    auto normal = [](std::mt19937_64& r, int64_t) { return std::normal_distribution<double>(0.0, 1.0)(r); };
    auto mostly_zero = [](std::mt19937_64& r, int64_t) {  // ReLU'd heads: many exact zeros, both signs
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(r);
        return u < 0.45 ? 0.0 : u < 0.9 ? -0.0 : u;  // fewer positives than top_k: the cut falls in the zeros
    };
    auto all_equal = [](std::mt19937_64&, int64_t) { return 2.5; };
    auto coarse = [](std::mt19937_64& r, int64_t) {  // groups of equal scores, negative ones too
        return (double)std::uniform_int_distribution<int>(-20, 20)(r) / 4.0;
    };
    auto descending = [](std::mt19937_64&, int64_t c) { return -(double)c; };
    // The shape: top_k 512, up to 16K rows (64K context), several tokens at once.
    topk_case("normal, 8192 rows", 32767, 1, 512, false, normal);
    topk_case("normal, 3 tokens via the step word", 65530, 3, 512, true, normal);
    topk_case("mostly zeros, ties at the threshold", 8200, 2, 512, false, mostly_zero);
    topk_case("all equal", 4000, 1, 512, false, all_equal);
    topk_case("coarse values", 6000, 4, 512, false, coarse);
    topk_case("descending (the first rows win)", 3000, 1, 512, false, descending);
    topk_case("one row more than top_k", 2051, 1, 512, false, normal);
    topk_case("no selection (n_c <= top_k)", 2000, 3, 512, false, normal);
    topk_case("top_k 1", 999, 2, 1, false, coarse);
    topk_case("top_k n_c - 1", 403, 1, 99, false, coarse);
    topk_case("small model: top_k 16", 1599, 5, 16, false, mostly_zero);
    // Scores: the real indexer (64 heads of 128), a model's smaller shapes, heads not dividing 256.
    scores_case("scores 64 x 128", 2100, 2, 64, 128, 512);
    scores_case("scores 4 x 64", 400, 3, 4, 64, 16);
    scores_case("scores 3 x 32", 300, 1, 3, 32, 2);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
