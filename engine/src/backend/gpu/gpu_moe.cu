// Mixture of experts on the GPU (Backend::moe), grouped by expert without the host
// reading the expert ids:
//   1. plan (one block): the (token, slot) pairs as columns grouped by expert in ascending
//      id order, tokens ascending within an expert (cpu_moe.cpp's order), and the list of
//      experts some token chose;
//   2. gate and up: block (b, s) computes kDotBlock / L rows of the s-th chosen expert for
//      each of its columns, a pass per column (or per kMoeCols columns: routed_one_column
//      below), then the clamped SwiGLU; blocks past the chosen experts return at
//      once. The shared expert is one more launch over every token, slot s taking the s-th
//      group of columns of a pass;
//   3. down, likewise;
//   4. per token and element, the weighted sum in k order, the shared expert last (double).
// The expert kernels (2, 3) are gpu_moe_kernels.h's; each product is gpu_dot.h's group_dot with L
// from the expert's shape, so a token's output never depends on which other tokens share the
// call (verify == decode).
#include "backend/gpu/gpu_moe_kernels.h"
#include "backend/gpu/gpu_moe_plan.h"

#include <stdint.h>

// One block: gpu_moe_plan.h's plan.
extern "C" __global__ void ds4_moe_plan_kernel(const int32_t* experts, int64_t n_pairs, int64_t NX, int32_t* count,
                                               int32_t* start, int32_t* col_of, int32_t* tok_of, int32_t* active,
                                               int32_t* n_active, int64_t K, int* fault) {
    ds4_kernel_entry();
    ds4::gpu::moe_plan_block<ds4::gpu::kPlanMaxExperts, ds4::gpu::kPlanMaxPairs>(experts, n_pairs, NX, count, start,
                                                                                col_of, tok_of, active, n_active, K,
                                                                                fault);
}

// One thread per (token, element): y = sum_k w_k out[col(i, k)] + shared, in double.
extern "C" __global__ void ds4_moe_combine_kernel(const float* out, const float* out_sh, const int32_t* col_of,
                                                  const float* weights, int64_t n_tokens, int64_t K, int64_t E,
                                                  float* y) {
    ds4_kernel_entry();
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
#include <algorithm>
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {

// One matrix (gate+up or down) of a set of experts: where it is and how it is reduced.
struct ExpertMatrix {
    MoeKernels kernels;
    int64_t rows, n_in;
    uint64_t row_bytes, expert_bytes;
    int L, wide;
    bool many;  // row_groups_for: groups of max_group_rows<NC>() rows
};

// The expert kernels of a weight type (gpu_moe_types_*.cu compile them, a part of the types each).
MoeKernels kernels_of(uint32_t type) {
    MoeKernels k{};
    if (moe_kernels_part0(type, &k) || moe_kernels_part1(type, &k) || moe_kernels_part2(type, &k) ||
        moe_kernels_part3(type, &k) || moe_kernels_part4(type, &k)) {
        return k;
    }
    throw UnsupportedError(DS4_GPU_WHO ": moe has no kernel for ggml type " + std::to_string(type));
}

ExpertMatrix expert_matrix(uint32_t type, int64_t rows, int64_t n_in, int64_t n_used, uint64_t row_bytes,
                           uint64_t expert_bytes, const void* base) {
    // Lanes from the experts' shape and how many a token uses, never from the call's tokens.
    const MoeKernels ks = kernels_of(type);
    return ExpertMatrix{ks,  rows, n_in, row_bytes, expert_bytes, dot_lanes(rows * n_used, n_in),
                        dot_wide_at(ks.wide_alignment, base, row_bytes | expert_bytes), row_groups_for(rows * n_used)};
}

// Rows per group of the down kernel for one (decode) or kMoeCols columns; gate_up's groups
// take half as many rows of gate and as many of up (at least one of each).
int rows_of(const ExpertMatrix& m, bool one) {
    return !m.many ? 1 : one ? max_group_rows<1>() : max_group_rows<kMoeCols>();
}
int gate_up_rows_half(const ExpertMatrix& m, bool one) { return std::max(1, rows_of(m, one) / 2); }

// How a call's columns are taken: one per pass, kMoeCols per pass, or (the shared expert in a
// prefill block) kMoeCols per pass by kWideRows rows per group, as the matmuls' wide calls.
struct Passes {
    bool one, wide;
    int rows_down(const ExpertMatrix& m) const { return wide ? kWideRows : rows_of(m, one); }
    int rows_gate_up_half(const ExpertMatrix& m) const { return wide ? kWideRows / 2 : gate_up_rows_half(m, one); }
    int columns() const { return one ? 1 : kMoeCols; }
};
dim3 grid_of(const ExpertMatrix& m, int64_t slots, int rows_per_group) {
    return dim3(dot_row_blocks(m.rows, m.L, rows_per_group), (unsigned)slots);
}

GateUpKernel gate_up_kernel(const ExpertMatrix& m, bool one, bool wide) {
    if (wide) return m.kernels.gate_up_wide;
    return one ? m.kernels.gate_up_one[gate_up_rows_half(m, one) == 1 ? 0 : 1] : m.kernels.gate_up_cols;
}
DownKernel down_kernel(const ExpertMatrix& m, bool one, bool wide) {
    if (wide) return m.kernels.down_wide;
    return (one ? m.kernels.down_one : m.kernels.down_cols)[m.many ? 1 : 0];
}

// Whether the routed experts of a call of several tokens run the one-column kernels (a pass
// per column; a block's rows are read from memory once and again from the cache): a prefill
// block of 32 tokens gives each chosen expert about 1.4 columns, and the kMoeCols kernels
// carry registers and loads in flight for 4. Columns per pass change no bit.
// DS4KIT_GPU_MOE_COLUMNS=auto|1|4 (auto: 1).
bool routed_one_column(int64_t n_tokens) {
    return n_tokens == 1 || env_choice("DS4KIT_GPU_MOE_COLUMNS", {"auto", "1", "4"}) != 2;
}

// The shared expert's calls of more than kNarrowCols tokens take kWideRows rows per group unless
// DS4KIT_GPU_WIDE_ROWS=never (gpu_matmul.cu's variable; no block-count rule here, as a slot per
// kMoeCols columns gives such a call 8 or more slots of row blocks).
bool wide_shared_expert() { return env_choice("DS4KIT_GPU_WIDE_ROWS", {"auto", "always", "never"}) != 2; }

void gate_up(const ExpertMatrix& m, int64_t slots, void* s, const uint8_t* gate, const uint8_t* up, const float* h,
             const int32_t* active, const int32_t* n_active, const int32_t* count, const int32_t* start,
             const int32_t* tok_of, int64_t n_tokens, double clamp, float* act, const uint64_t* grid, Passes ps) {
    const int x4 = dot_x_aligned(h, m.n_in);
    const GateUpKernel k = gate_up_kernel(m, ps.one, ps.wide);
    ds4_launch(k, grid_of(m, slots, ps.rows_gate_up_half(m)), dim3(kDotBlock), s, gate, up, m.expert_bytes,
               m.row_bytes, m.n_in, h, active, n_active, count, start, tok_of, n_tokens, m.rows, clamp, act, grid, m.L,
               m.wide, x4);
    DS4_GPU_CHECK_LAUNCH("ds4_moe_gate_up_kernel");
}

void down(const ExpertMatrix& m, int64_t slots, void* s, const uint8_t* w, const float* act, const int32_t* active,
          const int32_t* n_active, const int32_t* count, const int32_t* start, int64_t n_tokens, float* out,
          const uint64_t* grid, Passes ps) {
    const int x4 = dot_x_aligned(act, m.n_in);
    const DownKernel k = down_kernel(m, ps.one, ps.wide);
    ds4_launch(k, grid_of(m, slots, ps.rows_down(m)), dim3(kDotBlock), s, w, m.expert_bytes, m.row_bytes, m.n_in,
               act, active, n_active, count, start, n_tokens, m.rows, out, grid, m.L, m.wide, x4);
    DS4_GPU_CHECK_LAUNCH("ds4_moe_down_kernel");
}

}  // namespace

void launch_moe_routed(const MoeLaunch& a, void* s) {
    if (a.n_tokens <= 0) return;
    const int64_t n_pairs = a.n_tokens * a.K;
    if (a.n_expert > kPlanMaxExperts) {
        throw UnsupportedError(DS4_GPU_WHO ": moe: " + std::to_string(a.n_expert) + " experts; the plan kernel holds " +
                               std::to_string(kPlanMaxExperts));
    }
    // launch_moe_experts_int8 runs it (with the smaller plan's shared memory).
    const bool plan_with_h = a.int8 && a.n_expert <= kPlanSmallExperts && n_pairs <= kPlanSmallPairs && moe_plan_with_h();
    if (!plan_with_h) {
        ds4_launch(ds4_moe_plan_kernel, dim3(1), dim3(kPlanThreads), s, a.experts, n_pairs, a.n_expert, a.count,
                   a.start, a.col_of, a.tok_of, a.active, a.n_active, a.K, a.fault);
        DS4_GPU_CHECK_LAUNCH("ds4_moe_plan_kernel");
    }
    // Routed experts: a slot for each expert some pair may have chosen; slots past the
    // chosen ones return at once.
    const int64_t slots = std::min<int64_t>(a.n_expert, n_pairs);
    const ExpertMatrix gu = expert_matrix(a.exp.type, a.exp.F, a.E, a.K, a.exp.gate_up_row_bytes,
                                          a.exp.gate_up_expert_bytes, a.exp.gate);
    const ExpertMatrix dn = expert_matrix(a.exp.down_type, a.E, a.exp.F, a.K, a.exp.down_row_bytes,
                                          a.exp.down_expert_bytes, a.exp.down);
    if (a.int8) {  // the routed experts one column a pass, as routed_one_column's
        launch_moe_experts_int8(a, slots, ExpertWalk{gu.L, gu.wide, gate_up_rows_half(gu, true)},
                                ExpertWalk{dn.L, dn.wide, rows_of(dn, true)}, plan_with_h, s);
        return;
    }
    const Passes ps{routed_one_column(a.n_tokens), false};
    gate_up(gu, slots, s, a.exp.gate, a.exp.up, a.h, a.active, a.n_active, a.count, a.start, a.tok_of, a.n_tokens,
            a.clamp, a.act, a.grid, ps);
    down(dn, slots, s, a.exp.down, a.act, a.active, a.n_active, a.count, a.start, a.n_tokens, a.out, a.grid, ps);
}

void launch_moe_shared(const MoeLaunch& a, void* s) {
    if (a.n_tokens <= 0) return;
    if (a.int8_sh) {
        launch_moe_shared_int8(a, s);
        return;
    }
    const ExpertMatrix sgu = expert_matrix(a.sh.type, a.sh.F, a.E, 1, a.sh.gate_up_row_bytes, 0, a.sh.gate);
    const ExpertMatrix sdn = expert_matrix(a.sh.down_type, a.E, a.sh.F, 1, a.sh.down_row_bytes, 0, a.sh.down);
    // Column c is token c; slot s takes columns s C .. s C + C (C the columns of a pass).
    const Passes ps{a.n_tokens == 1, a.n_tokens > kNarrowCols && wide_shared_expert()};
    const int64_t slots = (a.n_tokens + ps.columns() - 1) / ps.columns();
    gate_up(sgu, slots, s, a.sh.gate, a.sh.up, a.h, nullptr, nullptr, nullptr, nullptr, nullptr, a.n_tokens,
            a.clamp_shared, a.act_sh, a.grid, ps);
    down(sdn, slots, s, a.sh.down, a.act_sh, nullptr, nullptr, nullptr, nullptr, a.n_tokens, a.out_sh, a.grid, ps);
}

void launch_moe_combine(const MoeLaunch& a, void* s) {
    if (a.n_tokens <= 0) return;
    const int64_t work = a.n_tokens * a.E;
    ds4_launch(ds4_moe_combine_kernel, dim3((unsigned)((work + 127) / 128)), dim3(128), s, a.out, a.out_sh, a.col_of,
               a.weights, a.n_tokens, a.K, a.E, a.y);
    DS4_GPU_CHECK_LAUNCH("ds4_moe_combine_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif

