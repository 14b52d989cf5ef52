// The expert kernels of the GPU's mixture of experts (gpu_moe.cu says how a call runs): gate and
// up with the clamped SwiGLU, and down, for the chosen experts and the shared one. Each
// product is gpu_dot.h's group_dot with L from the expert's shape, so a token's output never
// depends on which other tokens share the call (verify == decode). gpu_moe_types_*.cu
// instantiate them, a part of the weight types each (gpu_dot.h DS4_GPU_TYPES_PART_*).
#pragma once
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"  // before gpu_dot.h: core/numerics.h needs its device libm
#include "backend/gpu/gpu_dot.h"

#include <stdint.h>

namespace {
constexpr int kMoeCols = 4;  // columns of one expert a block computes per pass over its rows (calls of several tokens)

__device__ inline float clamped_swiglu(float gate, float up, double c) {
    double g = gate, u = up;
    if (c > 1e-6) {
        g = ds4::num::min_f64(g, c);
        u = ds4::num::min_f64(ds4::num::max_f64(u, -c), c);
    }
    return (float)(g * ds4::gpu::sigmoid(g) * u);
}

// The expert of block slot s and its columns [first, first + m); e < 0: no such expert.
struct Group {
    int64_t e, first, m;
};
// The shared expert (active null; column c is token c) gives slot s the NC columns from s NC.
template <int NC>
__device__ inline Group slot_group(const int32_t* active, const int32_t* n_active, const int32_t* count,
                                   const int32_t* start, int64_t s, int64_t n_tokens) {
    if (!active) return Group{0, s * NC, n_tokens - s * NC < NC ? n_tokens - s * NC : NC};
    if (s >= *n_active) return Group{-1, 0, 0};
    const int64_t e = active[s];
    return Group{e, start[e], count[e]};
}

// A gate_up group's row pointers: RH rows of gate from row r0 of expert e, then the same of up;
// rows past the expert's F repeat its last row (their sums are dropped).
template <int RH>
__device__ inline void gate_up_rows(const uint8_t* gate, const uint8_t* up, int64_t e, uint64_t expert_bytes,
                                    uint64_t row_bytes, int64_t r0, int64_t F, const uint8_t** rows) {
    for (int r = 0; r < RH; ++r) {
        const uint64_t off = e * expert_bytes + (uint64_t)(r0 + r < F ? r0 + r : F - 1) * row_bytes;
        rows[r] = gate + off;
        rows[RH + r] = up + off;
    }
}
// A down group's R row pointers from row r0 of expert e (of E rows), as gate_up_rows.
template <int R>
__device__ inline void down_rows(const uint8_t* down, int64_t e, uint64_t expert_bytes, uint64_t row_bytes, int64_t r0,
                                 int64_t E, const uint8_t** rows) {
    for (int r = 0; r < R; ++r) rows[r] = down + e * expert_bytes + (uint64_t)(r0 + r < E ? r0 + r : E - 1) * row_bytes;
}
}  // namespace

// Block (b, s): act[c * F + r] = swiglu(gate_e.row(r) . h_tok(c), up_e.row(r) . h_tok(c)),
// RH rows of gate and the same RH rows of up per group of lanes (one pass of 2 RH rows: their
// loads are in flight together, and each row's arithmetic is its own), NC columns per pass
// (1 when every expert has one column, as in decode: fewer registers).
template <int NC, int RH, uint32_t TYPE>
__global__ void DS4_DOT_BOUNDS ds4_moe_gate_up_kernel(const uint8_t* gate, const uint8_t* up, uint64_t expert_bytes,
                                       uint64_t row_bytes, int64_t n_in, const float* h, const int32_t* active,
                                       const int32_t* n_active, const int32_t* count, const int32_t* start,
                                       const int32_t* tok_of, int64_t n_tokens, int64_t F, double clamp, float* act,
                                       const uint64_t* grid, int L, int wide, int x4) {
    ds4_kernel_entry();
    constexpr int R = 2 * RH;
    __shared__ float part[R * NC * ds4::gpu::kDotBlock];
    const Group grp = slot_group<NC>(active, n_active, count, start, ds4_block_y(), n_tokens);
    if (grp.e < 0) return;  // the whole block: no chosen expert for this slot
    const ds4::gpu::Lanes ln = ds4::gpu::dot_lanes_of_thread(L);
    const int64_t r0 = ds4::gpu::group_row(ln, RH);
    const bool live = r0 < F;
    const uint8_t* rows[R];
    gate_up_rows<RH>(gate, up, grp.e, expert_bytes, row_bytes, r0, F, rows);
    for (int64_t c0 = 0; c0 < grp.m; c0 += NC) {
        const int nc = grp.m - c0 < NC ? (int)(grp.m - c0) : NC;
        const float* x[NC];
        for (int c = 0; c < NC; ++c) {
            const int64_t col = grp.first + c0 + (c < nc ? c : 0);
            x[c] = h + (int64_t)(tok_of ? tok_of[col] : col) * n_in;
        }
        float acc[R * NC], gu[R * NC];
        for (int c = 0; c < R * NC; ++c) acc[c] = 0.0f;
        if (live) ds4::gpu::group_dot<NC, R, TYPE>(rows, n_in, ln, wide != 0, x, nc, x4 != 0, grid, acc);
        ds4::gpu::group_reduce<R * NC>(acc, ln, part, gu);
        if (live && ln.lane == 0) {
            for (int r = 0; r < RH; ++r) {  // constant bounds: gu stays in registers
                for (int c = 0; c < NC; ++c) {
                    if (r0 + r < F && c < nc) {
                        act[(grp.first + c0 + c) * F + r0 + r] =
                            clamped_swiglu(gu[r * NC + c], gu[(RH + r) * NC + c], clamp);
                    }
                }
            }
        }
    }
}

// Block (b, s): out[c * E + r] = down_e.row(r) . act[c], R rows per group as gate_up.
template <int NC, int R, uint32_t TYPE>
__global__ void DS4_DOT_BOUNDS ds4_moe_down_kernel(const uint8_t* down, uint64_t expert_bytes, uint64_t row_bytes, int64_t F,
                                    const float* act, const int32_t* active, const int32_t* n_active,
                                    const int32_t* count, const int32_t* start, int64_t n_tokens, int64_t E, float* out,
                                    const uint64_t* grid, int L, int wide, int x4) {
    ds4_kernel_entry();
    __shared__ float part[R * NC * ds4::gpu::kDotBlock];
    const Group grp = slot_group<NC>(active, n_active, count, start, ds4_block_y(), n_tokens);
    if (grp.e < 0) return;
    const ds4::gpu::Lanes ln = ds4::gpu::dot_lanes_of_thread(L);
    const int64_t r0 = ds4::gpu::group_row(ln, R);
    const uint8_t* rows[R];
    down_rows<R>(down, grp.e, expert_bytes, row_bytes, r0, E, rows);
    for (int64_t c0 = 0; c0 < grp.m; c0 += NC) {
        const int nc = grp.m - c0 < NC ? (int)(grp.m - c0) : NC;
        const float* x[NC];
        for (int c = 0; c < NC; ++c) x[c] = act + (grp.first + c0 + (c < nc ? c : 0)) * F;
        float acc[R * NC], y[R * NC];
        for (int c = 0; c < R * NC; ++c) acc[c] = 0.0f;
        if (r0 < E) ds4::gpu::group_dot<NC, R, TYPE>(rows, F, ln, wide != 0, x, nc, x4 != 0, grid, acc);
        ds4::gpu::group_reduce<R * NC>(acc, ln, part, y);
        if (ln.lane == 0) {
            for (int r = 0; r < R; ++r) {
                for (int c = 0; c < NC; ++c) {
                    if (r0 + r < E && c < nc) out[(grp.first + c0 + c) * E + r0 + r] = y[r * NC + c];
                }
            }
        }
    }
}

#define DS4_MOE_GATE_UP(NC, RH, T)                                                                               \
    template __global__ void ds4_moe_gate_up_kernel<NC, RH, T>(const uint8_t*, const uint8_t*, uint64_t, uint64_t,      \
                                                               int64_t, const float*, const int32_t*, const int32_t*,   \
                                                               const int32_t*, const int32_t*, const int32_t*, int64_t, \
                                                               int64_t, double, float*, const uint64_t*, int, int, int);
#define DS4_MOE_DOWN(NC, R, T)                                                                                    \
    template __global__ void ds4_moe_down_kernel<NC, R, T>(const uint8_t*, uint64_t, uint64_t, int64_t, const float*, \
                                                           const int32_t*, const int32_t*, const int32_t*,            \
                                                           const int32_t*, int64_t, int64_t, float*, const uint64_t*, \
                                                           int, int, int);
// Every instantiation the launchers use, for one type (gpu_moe_types_*.cu expand it).
// gate_up's rows per group are 2 RH (gate_up_rows_half); down's 1 or max_group_rows<NC>().
// The shared expert's calls of more than 8 tokens: kWideRows rows per group (gate_up: half of gate).
#define DS4_MOE_INSTANCES(T)                                                                           \
    DS4_MOE_GATE_UP(1, 1, T) DS4_MOE_GATE_UP(1, ds4::gpu::max_group_rows<1>() / 2, T)                  \
    DS4_MOE_GATE_UP(kMoeCols, 1, T) DS4_MOE_DOWN(1, 1, T) DS4_MOE_DOWN(1, ds4::gpu::max_group_rows<1>(), T) \
    DS4_MOE_DOWN(kMoeCols, 1, T) DS4_MOE_DOWN(kMoeCols, ds4::gpu::max_group_rows<kMoeCols>(), T)         \
    DS4_MOE_GATE_UP(kMoeCols, ds4::gpu::kWideRows / 2, T) DS4_MOE_DOWN(kMoeCols, ds4::gpu::kWideRows, T)

#if DS4_GPU_HOST_CODE
namespace ds4 {
namespace gpu {

using GateUpKernel = void (*)(const uint8_t*, const uint8_t*, uint64_t, uint64_t, int64_t, const float*,
                              const int32_t*, const int32_t*, const int32_t*, const int32_t*, const int32_t*, int64_t,
                              int64_t, double, float*, const uint64_t*, int, int, int);
using DownKernel = void (*)(const uint8_t*, uint64_t, uint64_t, int64_t, const float*, const int32_t*, const int32_t*,
                            const int32_t*, const int32_t*, int64_t, int64_t, float*, const uint64_t*, int, int, int);

// The expert kernels of one weight type. [0]: one-row groups (gate_up: one row of gate and
// one of up), [1]: row groups (max_group_rows<NC>() rows; gate_up half as many of gate and
// as many of up); by one column a pass or kMoeCols; and the wide calls' kernels (the shared
// expert in a prefill block).
struct MoeKernels {
    GateUpKernel gate_up_one[2], gate_up_cols, gate_up_wide;
    DownKernel down_one[2], down_cols[2], down_wide;
    uint64_t wide_alignment;  // gpu_dequant.h wide_alignment<T>() (0: no wide loads)
};
template <uint32_t T>
MoeKernels moe_kernels_of() {
    constexpr int R1 = max_group_rows<1>(), RC = max_group_rows<kMoeCols>();
    static_assert(RC / 2 == 1, "gate_up of kMoeCols columns: one row of gate and of up");
    return MoeKernels{{ds4_moe_gate_up_kernel<1, 1, T>, ds4_moe_gate_up_kernel<1, R1 / 2, T>},
                      ds4_moe_gate_up_kernel<kMoeCols, 1, T>,
                      ds4_moe_gate_up_kernel<kMoeCols, kWideRows / 2, T>,
                      {ds4_moe_down_kernel<1, 1, T>, ds4_moe_down_kernel<1, R1, T>},
                      {ds4_moe_down_kernel<kMoeCols, 1, T>, ds4_moe_down_kernel<kMoeCols, RC, T>},
                      ds4_moe_down_kernel<kMoeCols, kWideRows, T>,
                      (uint64_t)wide_alignment<T>()};
}

// *k = the kernels of `type` if part P of the types (gpu_dot.h DS4_GPU_TYPES_PART_P) holds it
// (defined in gpu_moe_types_P.cu); false otherwise.
bool moe_kernels_part0(uint32_t type, MoeKernels* k);
bool moe_kernels_part1(uint32_t type, MoeKernels* k);
bool moe_kernels_part2(uint32_t type, MoeKernels* k);
bool moe_kernels_part3(uint32_t type, MoeKernels* k);
bool moe_kernels_part4(uint32_t type, MoeKernels* k);

}  // namespace gpu
}  // namespace ds4

#define DS4_MOE_PART_CASE(T) \
    case T: *k = moe_kernels_of<T>(); return true;
#define DS4_MOE_PART_LOOKUP(P)                                             \
    namespace ds4 {                                                        \
    namespace gpu {                                                        \
    bool moe_kernels_part##P(uint32_t type, MoeKernels* k) {               \
        switch (type) {                                                    \
            DS4_GPU_TYPES_PART_##P(DS4_MOE_PART_CASE) default: return false; \
        }                                                                  \
    }                                                                      \
    }                                                                      \
    }
#else
#define DS4_MOE_PART_LOOKUP(P)
#endif
