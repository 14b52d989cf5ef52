// gpu_moe_int8.cu's plan-and-h kernel (the default with int8 experts, DS4KIT_GPU_MOE_PLAN=fused)
// run on the host (sim_runtime.h) against the two kernels it stands for, gpu_moe.cu's plan then
// gpu_int8_columns.cu's quantiser of h (n_tokens columns of E): every output of both (counts,
// starts, columns, tokens, chosen experts, their number, the fault word, h's codes and scales)
// must be bit for bit the same: one token, a verify width, a prefill block, values past the last
// full quantiser block, an id out of range. Prints one line per case; exit status 1 if any
// differs. tests/engine/test_gpu_kernels_host_sim.py builds and runs it.
#include "sim_runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_moe.cu"
#include "backend/gpu/gpu_int8_columns.cu"
#include "backend/gpu/gpu_moe_int8.cu"

namespace {

int failures = 0;

struct Outputs {
    std::vector<int32_t> count, start, col_of, tok_of, active;
    int32_t n_active = -1;
    int fault = 0;
    std::vector<int8_t> q;
    std::vector<float> d;
    Outputs(int64_t NX, int64_t pairs, int64_t values)
        : count((size_t)NX, -1), start((size_t)NX, -1), col_of((size_t)pairs, -9), tok_of((size_t)pairs, -9),
          active((size_t)NX, -1), q((size_t)values, 99), d((size_t)(values / 32), -1.0f) {}
};

template <class T>
bool same(const std::string& name, const char* what, const std::vector<T>& a, const std::vector<T>& b) {
    if (a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0) return true;
    std::printf("FAIL %s: %s differ\n", name.c_str(), what);
    ++failures;
    return false;
}

void run(const std::string& name, int64_t n_tokens, int64_t K, int64_t NX, int64_t E, int bad_at = -1) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t pairs = n_tokens * K, values = n_tokens * E;
    std::vector<int32_t> experts((size_t)pairs);
    for (int64_t t = 0; t < n_tokens; ++t) {
        std::vector<int32_t> all((size_t)NX);
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng);
        for (int64_t k = 0; k < K; ++k) experts[(size_t)(t * K + k)] = all[(size_t)k];
    }
    if (bad_at >= 0) experts[(size_t)bad_at] = (int32_t)NX;
    std::vector<float> h((size_t)values);
    for (float& v : h) v = nd(rng);
    h[0] = 0.0f;  // ties and zeros in the first int8 block
    h[1] = -h[2];

    Outputs two(NX, pairs, values), one(NX, pairs, values);
    sim_launch(1, 1, ds4::gpu::kPlanThreads, [&] {
        ds4_moe_plan_kernel(experts.data(), pairs, NX, two.count.data(), two.start.data(), two.col_of.data(),
                            two.tok_of.data(), two.active.data(), &two.n_active, K, &two.fault);
    });
    sim_launch((unsigned)ds4::gpu::int8_columns_blocks(values), 1, ds4::gpu::kInt8QuantThreads, [&] {
        ds4_int8_columns_kernel(h.data(), E, 1, 0, E, values, two.q.data(), two.d.data());
    });
    sim_launch((unsigned)(ds4::gpu::int8_columns_blocks(values) + 1), 1, ds4::gpu::kPlanThreads, [&] {
        ds4_moe_plan_int8_kernel(experts.data(), pairs, NX, one.count.data(), one.start.data(), one.col_of.data(),
                                 one.tok_of.data(), one.active.data(), &one.n_active, K, &one.fault, h.data(), values,
                                 one.q.data(), one.d.data());
    });
    const bool ok = same(name, "counts", one.count, two.count) && same(name, "starts", one.start, two.start) &&
                    same(name, "columns", one.col_of, two.col_of) && same(name, "tokens", one.tok_of, two.tok_of) &&
                    same(name, "chosen experts", one.active, two.active) && same(name, "codes", one.q, two.q) &&
                    same(name, "scales", one.d, two.d);
    if (!ok) return;
    if (one.n_active != two.n_active || one.fault != two.fault) {
        std::printf("FAIL %s: %d chosen, fault %d instead of %d, %d\n", name.c_str(), one.n_active, one.fault,
                    two.n_active, two.fault);
        ++failures;
        return;
    }
    std::printf("ok   %s\n", name.c_str());
}

}  // namespace

int main() {
    run("one token, 6 of 256 experts, E 4096", 1, 6, 256, 4096);
    run("verify of 8 tokens", 8, 6, 256, 4096);
    run("a prefill block of 32 tokens", 32, 6, 256, 4096);
    run("E 96: the last quantiser block part full", 3, 2, 16, 96);
    run("an id out of range", 2, 6, 256, 4096, 7);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
