// Mixture of experts on the GPU (Backend::moe), grouped by expert without the host
// reading the expert ids:
//   1. plan (one thread): the (token, slot) pairs as columns grouped by expert in ascending
//      id order, tokens ascending within an expert (cpu_moe.cpp's order);
//   2. gate and up: block (row r, expert e) computes row r of expert e for each of e's
//      columns (the expert's row is read from memory once, its columns hit the cache), then
//      the clamped SwiGLU; the shared expert is one more launch over every token;
//   3. down, likewise;
//   4. per token and element, the weighted sum in k order, the shared expert last (double).
// Each product is gpu_dot.h's block_dot of one column, so a token's output never depends
// on which other tokens share the call (verify == decode).
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_dot.h"
#include "backend/gpu/gpu_math.h"

#include <stdint.h>

namespace {
[[maybe_unused]] constexpr int kThreads = 128;  // the launchers' block size (unused in the device pass)

__device__ inline float clamped_swiglu(float gate, float up, double c) {
    double g = gate, u = up;
    if (c > 1e-6) {
        g = ds4::num::min_f64(g, c);
        u = ds4::num::min_f64(ds4::num::max_f64(u, -c), c);
    }
    return (float)(g * ds4::gpu::sigmoid(g) * u);
}

// Columns of group `e`: [first, first + m), and the token of column c.
struct Cols {
    int64_t first, m;
};
__device__ inline Cols group_cols(const int32_t* count, const int32_t* start, int64_t e, int64_t n_tokens) {
    if (!count) return Cols{0, n_tokens};  // the shared expert: column c is token c
    return Cols{start[e], count[e]};
}
}  // namespace

// Fault 3: an expert id outside 0..NX-1 (then no routed expert contributes).
extern "C" __global__ void ds4_moe_plan_kernel(const int32_t* experts, int64_t n_pairs, int64_t NX, int32_t* count,
                                               int32_t* start, int32_t* col_of, int32_t* tok_of, int64_t K,
                                               int* fault) {
    if (ds4_thread_x() != 0 || ds4_block_x() != 0) return;
    for (int64_t e = 0; e < NX; ++e) count[e] = 0;
    bool bad = false;
    for (int64_t j = 0; j < n_pairs; ++j) {
        const int32_t e = experts[j];
        if (e < 0 || e >= NX) {
            bad = true;
        } else {
            count[e]++;
        }
    }
    if (bad) {
        *fault = 3;
        for (int64_t e = 0; e < NX; ++e) count[e] = 0;
        for (int64_t j = 0; j < n_pairs; ++j) col_of[j] = -1;
        return;
    }
    int32_t c = 0;
    for (int64_t e = 0; e < NX; ++e) {
        start[e] = c;
        c += count[e];
    }
    // start[] is advanced while placing, then restored (each expert's first column).
    for (int64_t j = 0; j < n_pairs; ++j) {
        const int32_t col = start[experts[j]]++;
        col_of[j] = col;
        tok_of[col] = (int32_t)(j / K);
    }
    for (int64_t e = 0; e < NX; ++e) start[e] -= count[e];
}

// Block (r, e): act[c * F + r] = swiglu(gate_e.row(r) . h_tok(c), up_e.row(r) . h_tok(c)).
template <uint32_t TYPE>
__global__ void ds4_moe_gate_up_kernel(const uint8_t* gate, const uint8_t* up, uint64_t expert_bytes,
                                       uint64_t row_bytes, int64_t n_in, const float* h, const int32_t* count,
                                       const int32_t* start, const int32_t* tok_of, int64_t n_tokens, int64_t F,
                                       double clamp, float* act, const uint64_t* grid) {
    __shared__ float part[ds4::gpu::kDotThreads];
    const int64_t r = ds4_block_x(), e = ds4_block_y();
    const Cols cols = group_cols(count, start, e, n_tokens);
    const uint8_t* grow = gate + e * expert_bytes + (uint64_t)r * row_bytes;
    const uint8_t* urow = up + e * expert_bytes + (uint64_t)r * row_bytes;
    for (int64_t c = cols.first; c < cols.first + cols.m; ++c) {
        const float* x[1] = {h + (int64_t)(tok_of ? tok_of[c] : c) * n_in};
        float g, u;
        ds4::gpu::block_dot<1, TYPE>(grow, n_in, x, grid, part, &g);
        ds4::gpu::block_dot<1, TYPE>(urow, n_in, x, grid, part, &u);
        if (ds4_thread_x() == 0) act[c * F + r] = clamped_swiglu(g, u, clamp);
    }
}

// Block (r, e): out[c * E + r] = down_e.row(r) . act[c].
template <uint32_t TYPE>
__global__ void ds4_moe_down_kernel(const uint8_t* down, uint64_t expert_bytes, uint64_t row_bytes, int64_t F,
                                    const float* act, const int32_t* count, const int32_t* start, int64_t n_tokens,
                                    int64_t E, float* out, const uint64_t* grid) {
    __shared__ float part[ds4::gpu::kDotThreads];
    const int64_t r = ds4_block_x(), e = ds4_block_y();
    const Cols cols = group_cols(count, start, e, n_tokens);
    const uint8_t* row = down + e * expert_bytes + (uint64_t)r * row_bytes;
    for (int64_t c = cols.first; c < cols.first + cols.m; ++c) {
        const float* x[1] = {act + c * F};
        float y;
        ds4::gpu::block_dot<1, TYPE>(row, F, x, grid, part, &y);
        if (ds4_thread_x() == 0) out[c * E + r] = y;
    }
}

#define DS4_MOE_INSTANCES(T)                                                                                       \
    template __global__ void ds4_moe_gate_up_kernel<T>(const uint8_t*, const uint8_t*, uint64_t, uint64_t, int64_t, \
                                                       const float*, const int32_t*, const int32_t*, const int32_t*, \
                                                       int64_t, int64_t, double, float*, const uint64_t*);          \
    template __global__ void ds4_moe_down_kernel<T>(const uint8_t*, uint64_t, uint64_t, int64_t, const float*,      \
                                                    const int32_t*, const int32_t*, int64_t, int64_t, float*,       \
                                                    const uint64_t*);
DS4_GPU_FOR_EACH_TYPE(DS4_MOE_INSTANCES)

// One thread per (token, element): y = sum_k w_k out[col(i, k)] + shared, in double.
extern "C" __global__ void ds4_moe_combine_kernel(const float* out, const float* out_sh, const int32_t* col_of,
                                                  const float* weights, int64_t n_tokens, int64_t K, int64_t E,
                                                  float* y) {
    const int64_t k = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (k >= n_tokens * E) return;
    const int64_t i = k / E, d = k % E;
    double acc = 0.0;
    for (int64_t j = 0; j < K; ++j) {
        const int32_t c = col_of[i * K + j];
        if (c >= 0) acc += (double)weights[i * K + j] * (double)out[(int64_t)c * E + d];
    }
    acc += (double)out_sh[i * E + d];
    y[k] = (float)acc;
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {

void gate_up(uint32_t type, dim3 g, void* s, const uint8_t* gate, const uint8_t* up, uint64_t expert_bytes,
             uint64_t row_bytes, int64_t n_in, const float* h, const int32_t* count, const int32_t* start,
             const int32_t* tok_of, int64_t n_tokens, int64_t F, double clamp, float* act, const uint64_t* grid) {
    switch (type) {
#define DS4_CASE(T)                                                                                                \
    case T:                                                                                                        \
        ds4_launch(ds4_moe_gate_up_kernel<T>, g, dim3(kThreads), s, gate, up, expert_bytes, row_bytes, n_in, h, count, \
                   start, tok_of, n_tokens, F, clamp, act, grid);                                                   \
        break;
        DS4_GPU_FOR_EACH_TYPE(DS4_CASE)
#undef DS4_CASE
        default: throw UnsupportedError(DS4_GPU_WHO ": moe has no kernel for ggml type " + std::to_string(type));
    }
    DS4_GPU_CHECK_LAUNCH("ds4_moe_gate_up_kernel");
}

void down(uint32_t type, dim3 g, void* s, const uint8_t* w, uint64_t expert_bytes, uint64_t row_bytes, int64_t F,
          const float* act, const int32_t* count, const int32_t* start, int64_t n_tokens, int64_t E, float* out,
          const uint64_t* grid) {
    switch (type) {
#define DS4_CASE(T)                                                                                                  \
    case T:                                                                                                          \
        ds4_launch(ds4_moe_down_kernel<T>, g, dim3(kThreads), s, w, expert_bytes, row_bytes, F, act, count, start, \
                   n_tokens, E, out, grid);                                                                          \
        break;
        DS4_GPU_FOR_EACH_TYPE(DS4_CASE)
#undef DS4_CASE
        default: throw UnsupportedError(DS4_GPU_WHO ": moe has no kernel for ggml type " + std::to_string(type));
    }
    DS4_GPU_CHECK_LAUNCH("ds4_moe_down_kernel");
}

}  // namespace

void launch_moe(const MoeLaunch& a, void* s) {
    if (a.n_tokens <= 0) return;
    const int64_t n_pairs = a.n_tokens * a.K;
    ds4_launch(ds4_moe_plan_kernel, dim3(1), dim3(1), s, a.experts, n_pairs, a.n_expert, a.count, a.start, a.col_of,
               a.tok_of, a.K, a.fault);
    DS4_GPU_CHECK_LAUNCH("ds4_moe_plan_kernel");
    // Routed experts: every (row, expert); experts nobody chose return at once.
    gate_up(a.exp.type, dim3((unsigned)a.exp.F, (unsigned)a.n_expert), s, a.exp.gate, a.exp.up, a.exp.gate_up_expert_bytes,
            a.exp.gate_up_row_bytes, a.E, a.h, a.count, a.start, a.tok_of, a.n_tokens, a.exp.F, a.clamp, a.act,
            a.grid);
    down(a.exp.down_type, dim3((unsigned)a.E, (unsigned)a.n_expert), s, a.exp.down, a.exp.down_expert_bytes,
         a.exp.down_row_bytes, a.exp.F, a.act, a.count, a.start, a.n_tokens, a.E, a.out, a.grid);
    // The shared expert: one group, column c = token c.
    gate_up(a.sh.type, dim3((unsigned)a.sh.F, 1), s, a.sh.gate, a.sh.up, 0, a.sh.gate_up_row_bytes, a.E, a.h, nullptr,
            nullptr, nullptr, a.n_tokens, a.sh.F, a.clamp_shared, a.act_sh, a.grid);
    down(a.sh.down_type, dim3((unsigned)a.E, 1), s, a.sh.down, 0, a.sh.down_row_bytes, a.sh.F, a.act_sh, nullptr, nullptr,
         a.n_tokens, a.E, a.out_sh, a.grid);
    const int64_t work = a.n_tokens * a.E;
    ds4_launch(ds4_moe_combine_kernel, dim3((unsigned)((work + 127) / 128)), dim3(128), s, a.out, a.out_sh, a.col_of,
               a.weights, a.n_tokens, a.K, a.E, a.y);
    DS4_GPU_CHECK_LAUNCH("ds4_moe_combine_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
