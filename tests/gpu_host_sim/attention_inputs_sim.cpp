// gpu_attention_inputs.cu's kernel (GpuBackend::attention_inputs) run on the host (sim_runtime.h)
// against the kernels of the six seam calls it replaces: rms_norm of the query heads and of the
// KV row (gpu_norm.cu), rope_tail of each and the FP8 round trip (gpu_ops.cu), then kv_store's
// F16 of each value into ring slot (p0 + i) % ring_rows (stated here: one conversion a value).
// Q, the KV rows and the whole ring must be bit for bit the same: the real model's rows (64
// heads of 512, 64 rotated), rows shorter than a block and longer (two values a thread), an FP8
// block cut short, FP8 off, YaRN angles, positions from a device word (step graphs), a ring that
// wraps, and extreme values. Prints one line per case; exit status 1 if any differs.
// tests/engine/test_gpu_kernels_host_sim.py builds and runs it.
#include "sim_runtime.h"
#include "sim_compare.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_attention_inputs.cu"
#include "backend/gpu/gpu_norm.cu"
#include "backend/gpu/gpu_ops.cu"

namespace {

int failures = 0;

struct Case {
    std::string name;
    int64_t n = 1, H = 64, D = 512, n_rot = 64, p0 = 7, ring_rows = 16;
    bool fp8 = true, yarn = false, device_pos = false;
    double x_scale = 1.0;
};

void run(const Case& c) {
    std::mt19937_64 rng(std::hash<std::string>()(c.name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> Q0((size_t)(c.n * c.H * c.D)), kv0((size_t)(c.n * c.D)), w((size_t)c.D);
    for (float& v : Q0) v = (float)(nd(rng) * c.x_scale);
    for (float& v : kv0) v = (float)(nd(rng) * c.x_scale);
    for (float& v : w) v = 1.0f + 0.1f * nd(rng);
    ds4::RopeSpec spec;
    spec.n_rot = c.n_rot;
    if (c.yarn) {
        spec.freq_scale = 1.0 / 16.0;
        spec.ext_factor = 1.0;
        spec.n_ctx_orig = 4096;
    }
    const double eps = 1e-6;
    const int64_t word = c.p0 - 3;  // a step graph's base position: relative 3 on top of it
    const ds4::gpu::StepPos pos = c.device_pos ? ds4::gpu::StepPos{3, &word} : ds4::gpu::absolute_pos(c.p0);
    const int64_t fp8_len = c.fp8 ? c.D - c.n_rot : 0;

    // The six calls.
    std::vector<float> Q2 = Q0, kv2 = kv0;
    std::vector<uint16_t> ring2((size_t)(c.ring_rows * c.D), 0x7e00);
    sim_launch((unsigned)(c.n * c.H), 1, ds4::gpu::kNormThreads,
               [&] { ds4_rms_norm_kernel(Q2.data(), nullptr, c.D, eps, Q2.data(), nullptr, nullptr); });
    sim_launch((unsigned)c.n, 1, ds4::gpu::kNormThreads,
               [&] { ds4_rms_norm_kernel(kv2.data(), w.data(), c.D, eps, kv2.data(), nullptr, nullptr); });
    sim_launch((unsigned)c.n, (unsigned)((c.H + kRopeRows - 1) / kRopeRows), kThreads,
               [&] { ds4_rope_tail_kernel(Q2.data(), c.H, c.D, pos, spec, 0); });
    sim_launch((unsigned)c.n, 1, kThreads, [&] { ds4_rope_tail_kernel(kv2.data(), 1, c.D, pos, spec, 0); });
    if (fp8_len > 0) {
        sim_launch((unsigned)(c.n * ((fp8_len + 63) / 64)), 1, 64,
                   [&] { ds4_fp8_kv_kernel(kv2.data(), c.n, c.D, c.n_rot); });
    }
    for (int64_t i = 0; i < c.n; ++i) {
        for (int64_t j = 0; j < c.D; ++j) ring2[(size_t)(((c.p0 + i) % c.ring_rows) * c.D + j)] = ds4::f32_to_f16(kv2[(size_t)(i * c.D + j)]);
    }

    // The one kernel.
    std::vector<float> Q1 = Q0, kv1 = kv0;
    std::vector<uint16_t> ring1((size_t)(c.ring_rows * c.D), 0x7e00);
    sim_launch((unsigned)c.n, (unsigned)(c.H + 1), ds4::gpu::kNormThreads, [&] {
        ds4_attention_inputs_kernel(Q1.data(), c.H, kv1.data(), w.data(), c.D, eps, pos, spec, fp8_len, c.ring_rows,
                                    ring1.data());
    });

    std::vector<float> r1(ring1.size()), r2(ring2.size());
    for (size_t i = 0; i < ring1.size(); ++i) r1[i] = ds4::f16_to_f32(ring1[i]), r2[i] = ds4::f16_to_f32(ring2[i]);
    if (same_floats(failures, c.name, "query", Q1, Q2) && same_floats(failures, c.name, "kv", kv1, kv2) &&
        same_floats(failures, c.name, "ring", r1, r2)) {
        std::printf("ok   %s\n", c.name.c_str());
    }
}

}  // namespace

int main() {
    run({"model rows: 64 heads of 512, 64 rotated, 1 token"});
    Case c{"3 tokens, ring wraps, position from a device word"};
    c.n = 3, c.p0 = 14, c.device_pos = true;
    run(c);
    c = Case{"short rows (64, 16 rotated), 4 heads, YaRN"};
    c.H = 4, c.D = 64, c.n_rot = 16, c.yarn = true;
    run(c);
    c = Case{"an FP8 block cut short (96 - 16 = 80 values)"};
    c.H = 3, c.D = 96, c.n_rot = 16, c.n = 2;
    run(c);
    c = Case{"longest row (1024), two values a thread"};
    c.H = 2, c.D = 1024, c.n_rot = 64;
    run(c);
    c = Case{"FP8 off"};
    c.H = 8, c.D = 128, c.n_rot = 32, c.fp8 = false;
    run(c);
    c = Case{"large values (1e18)"};
    c.H = 4, c.D = 256, c.x_scale = 1e18;
    run(c);
    c = Case{"rows of zeros (the eps alone)"};
    c.H = 2, c.D = 128, c.n_rot = 32, c.x_scale = 0.0;
    run(c);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
