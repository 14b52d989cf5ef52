// gpu_ops.cu's route kernel and gpu_moe.cu's plan kernel run on the host (sim_runtime.h) against
// plain statements of what they compute (cpu_route.cpp, cpu_moe.cpp):
// - route: s = sqrt(softplus(logit)); the K experts of largest s + bias (ties: lower id first) or
//   the token's hash row; weights s / max(sum in k order, floor) * scale, in double, rounded once;
//   a token outside the hash table sets fault 2 and writes nothing;
// - plan: the (token, slot) pairs grouped by expert in ascending id order, tokens ascending
//   within an expert: each expert's count and first column, the chosen experts in order, each
//   pair's column and each column's token; an id out of range sets fault 3.
// Prints one line per case; exit status 1 if any differs. tests/engine/test_gpu_kernels_host_sim.py
// builds and runs it.
#include "sim_runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_moe.cu"
#include "backend/gpu/gpu_ops.cu"

namespace {

int failures = 0;

double reference_score(float logit) {
    const double x = logit;
    return std::sqrt(std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))));
}

bool fail(const std::string& name, const std::string& what) {
    std::printf("FAIL %s: %s\n", name.c_str(), what.c_str());
    ++failures;
    return false;
}

// Biased (hash empty) or hashed routing of n tokens over NX experts, K a token.
bool route_case(const std::string& name, int64_t n, int64_t NX, int64_t K, bool hashed, bool ties, bool normalise) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> nd(0.0f, 2.0f);
    std::vector<float> logits((size_t)(n * NX)), bias((size_t)NX);
    for (float& v : logits) v = ties ? (float)std::uniform_int_distribution<int>(-2, 2)(rng) : nd(rng);
    for (float& v : bias) v = ties ? 0.0f : 0.1f * nd(rng);
    const int64_t hash_rows = 50, hash_stride = K + 1;
    std::vector<int32_t> tokens((size_t)n), hash((size_t)(hash_rows * hash_stride));
    for (int32_t& tk : tokens) tk = std::uniform_int_distribution<int32_t>(0, (int32_t)hash_rows - 1)(rng);
    for (int32_t& h : hash) h = std::uniform_int_distribution<int32_t>(0, (int32_t)NX - 1)(rng);
    const double scale = 1.5;
    std::vector<int32_t> ex((size_t)(n * K), -7);
    std::vector<float> w((size_t)(n * K), -7.0f);
    int fault = 0;
    sim_launch((unsigned)n, 1, kRouteThreads, [&] {
        ds4_route_kernel(logits.data(), tokens.data(), n, NX, K, hashed ? hash.data() : nullptr, hash_rows,
                         hash_stride, bias.data(), normalise ? 1 : 0, scale, ex.data(), w.data(), &fault);
    });
    if (fault != 0) return fail(name, "fault " + std::to_string(fault));
    for (int64_t i = 0; i < n; ++i) {
        const float* gl = logits.data() + i * NX;
        std::vector<int32_t> want((size_t)K);
        if (hashed) {
            for (int64_t k = 0; k < K; ++k) want[(size_t)k] = hash[(size_t)(tokens[(size_t)i] * hash_stride + k)];
        } else {
            std::vector<int32_t> order((size_t)NX);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
                return reference_score(gl[a]) + (double)bias[(size_t)a] > reference_score(gl[b]) + (double)bias[(size_t)b];
            });
            std::copy(order.begin(), order.begin() + K, want.begin());
        }
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k) sum += reference_score(gl[want[(size_t)k]]);
        const double norm = normalise ? 1.0 / std::max(sum, 6.103515625e-5) : 1.0;
        for (int64_t k = 0; k < K; ++k) {
            const float ww = (float)(reference_score(gl[want[(size_t)k]]) * norm * scale);
            const size_t at = (size_t)(i * K + k);
            if (ex[at] != want[(size_t)k] || std::memcmp(&w[at], &ww, 4) != 0) {
                return fail(name, "token " + std::to_string(i) + " slot " + std::to_string(k) + ": expert " +
                                      std::to_string(ex[at]) + " weight " + std::to_string(w[at]) + " instead of " +
                                      std::to_string(want[(size_t)k]) + ", " + std::to_string(ww));
            }
        }
    }
    std::printf("ok   %s\n", name.c_str());
    return true;
}

void route_fault_case(const std::string& name) {
    const int64_t n = 2, NX = 16, K = 2;
    std::vector<float> logits((size_t)(n * NX), 0.5f);
    std::vector<int32_t> tokens = {3, 99}, hash(10 * K, 1);
    std::vector<int32_t> ex((size_t)(n * K), -7);
    std::vector<float> w((size_t)(n * K), -7.0f);
    int fault = 0;
    sim_launch((unsigned)n, 1, kRouteThreads, [&] {
        ds4_route_kernel(logits.data(), tokens.data(), n, NX, K, hash.data(), 10, K, nullptr, 1, 1.0, ex.data(),
                         w.data(), &fault);
    });
    if (fault != 2) return (void)fail(name, "fault " + std::to_string(fault) + " instead of 2");
    if (ex[2] != -7 || ex[3] != -7 || w[2] != -7.0f) return (void)fail(name, "the bad token's row was written");
    if (ex[0] != 1 || ex[1] != 1) return (void)fail(name, "the good token's row is wrong");
    std::printf("ok   %s\n", name.c_str());
}

void plan_case(const std::string& name, int64_t n_tokens, int64_t K, int64_t NX, int bad_at = -1) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    const int64_t n_pairs = n_tokens * K;
    std::vector<int32_t> experts((size_t)n_pairs);
    for (int64_t t = 0; t < n_tokens; ++t) {  // K distinct experts a token, as routing gives
        std::vector<int32_t> all((size_t)NX);
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng);
        for (int64_t k = 0; k < K; ++k) experts[(size_t)(t * K + k)] = all[(size_t)k];
    }
    if (bad_at >= 0) experts[(size_t)bad_at] = (int32_t)NX;
    std::vector<int32_t> count((size_t)NX, -1), start((size_t)NX, -1), col_of((size_t)n_pairs, -9),
        tok_of((size_t)n_pairs, -9), active((size_t)NX, -1);
    int32_t n_active = -1;
    int fault = 0;
    sim_launch(1, 1, ds4::gpu::kPlanThreads, [&] {
        ds4_moe_plan_kernel(experts.data(), n_pairs, NX, count.data(), start.data(), col_of.data(), tok_of.data(),
                            active.data(), &n_active, K, &fault);
    });
    if (bad_at >= 0) {
        const bool ok = fault == 3 && n_active == 0 &&
                        std::all_of(count.begin(), count.end(), [](int32_t c) { return c == 0; }) &&
                        std::all_of(col_of.begin(), col_of.end(), [](int32_t c) { return c == -1; });
        if (!ok) return (void)fail(name, "an id out of range: fault " + std::to_string(fault));
        std::printf("ok   %s\n", name.c_str());
        return;
    }
    std::vector<int32_t> order((size_t)n_pairs);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return experts[a] < experts[b]; });
    std::vector<int32_t> want_count((size_t)NX, 0), want_start((size_t)NX, 0), want_active;
    for (int32_t e : experts) ++want_count[(size_t)e];
    for (int64_t e = 1; e < NX; ++e) want_start[(size_t)e] = want_start[(size_t)(e - 1)] + want_count[(size_t)(e - 1)];
    for (int64_t e = 0; e < NX; ++e) {
        if (want_count[(size_t)e]) want_active.push_back((int32_t)e);
    }
    if (fault != 0 || n_active != (int32_t)want_active.size()) return (void)fail(name, "fault or chosen count");
    for (int64_t e = 0; e < NX; ++e) {
        if (count[(size_t)e] != want_count[(size_t)e] || start[(size_t)e] != want_start[(size_t)e]) {
            return (void)fail(name, "expert " + std::to_string(e) + ": count or start");
        }
    }
    if (!std::equal(want_active.begin(), want_active.end(), active.begin())) return (void)fail(name, "chosen list");
    for (int64_t c = 0; c < n_pairs; ++c) {
        const int32_t j = order[(size_t)c];
        if (col_of[(size_t)j] != (int32_t)c || tok_of[(size_t)c] != (int32_t)(j / K)) {
            return (void)fail(name, "pair " + std::to_string(j) + ": column or token");
        }
    }
    std::printf("ok   %s\n", name.c_str());
}

}  // namespace

int main() {
    route_case("biased, one token, 256 experts, 6 used", 1, 256, 6, false, false, true);
    route_case("biased, 5 tokens, ties everywhere", 5, 256, 6, false, true, true);
    route_case("biased, 1000 experts, 8 used, not normalised", 2, 1000, 8, false, false, false);
    route_case("hashed, 3 tokens", 3, 256, 6, true, false, true);
    route_fault_case("hashed, a token outside the table");
    plan_case("plan, one token", 1, 6, 256);
    plan_case("plan, a block of 32 tokens", 32, 6, 256);
    plan_case("plan, 16 tokens, 2048 experts", 16, 8, 2048);
    plan_case("plan, more pairs than shared memory holds", 400, 6, 256);
    plan_case("plan, an id out of range", 4, 6, 256, 9);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
