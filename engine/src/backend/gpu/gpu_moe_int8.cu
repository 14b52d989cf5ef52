// The routed Q2_K experts, and with them a Q8_0 shared expert, on int8 columns (gpu_int8.h); the
// default (DS4KIT_GPU_INT8=never: float columns; experts: the routed ones only; gpu_kernels.h
// int8_scope): after gpu_moe.cu's plan, h is quantised per token (gpu_int8_columns.cu), gate and up run on it, the SwiGLU output is
// quantised per column, and down runs on that. A Q8_0 shared expert runs beside them on the side
// stream as the Q8_0 matmuls on int8 columns (gpu_matmul_int8.cu: decode's GEMV, a prefill
// block's tensor-core GEMM, the same bits), gate and up in one set, then its SwiGLU output
// quantised by one launch, then down. Every path of a token (decode, verify, prefill)
// takes these kernels, whose columns' sums do not depend on the columns a pass takes, so a
// token's output never depends on the call (verify == decode); the oracle is the float64
// reference with int8 columns (tests/reference/ds4_ref_int8.py), not the CPU engine, whose
// columns stay float.
#include "backend/gpu/gpu_int8.h"
#include "backend/gpu/gpu_moe_kernels.h"  // Group, slot_group, the groups' rows, clamped_swiglu
#include "backend/gpu/gpu_moe_plan.h"

#include <stdint.h>

namespace {
constexpr uint32_t kQ2K = 10;
}  // namespace

// Block (b, s): act[c * F + r] = swiglu(gate_e.row(r) . h_tok(c), up_e.row(r) . h_tok(c)) for
// the s-th chosen expert's columns c, RH rows of gate and the same of up a group (as gpu_moe_kernels.h's gate_up), NC columns a
// pass; h as int8 columns (hq, hd) per token, the weights' TYPE walk of gpu_int8.h.
template <int RH, int NC, uint32_t TYPE>
__global__ void DS4_DOT_BOUNDS ds4_moe_gate_up_int8_kernel(
    const uint8_t* gate, const uint8_t* up, uint64_t expert_bytes, uint64_t row_bytes, int64_t n_in, const int8_t* hq,
    const float* hd, const int32_t* active, const int32_t* n_active, const int32_t* count, const int32_t* start,
    const int32_t* tok_of, int64_t n_tokens, int64_t F, double clamp, float* act, int L, int wide) {
    ds4_kernel_entry();
    constexpr int R = 2 * RH;
    __shared__ float part[R * NC * ds4::gpu::kDotBlock];
    const Group grp = slot_group<NC>(active, n_active, count, start, ds4_block_y(), n_tokens);
    if (grp.e < 0) return;  // the whole block
    const ds4::gpu::Lanes ln = ds4::gpu::dot_lanes_of_thread(L);
    const int64_t r0 = ds4::gpu::group_row(ln, RH);
    const bool live = r0 < F;
    const uint8_t* rows[R];
    gate_up_rows<RH>(gate, up, grp.e, expert_bytes, row_bytes, r0, F, rows);
    for (int64_t c0 = 0; c0 < grp.m; c0 += NC) {
        const int nc = grp.m - c0 < NC ? (int)(grp.m - c0) : NC;
        const int8_t* xq[NC];
        const float* xd[NC];
        for (int c = 0; c < NC; ++c) {
            const int64_t col = grp.first + c0 + (c < nc ? c : 0), tok = tok_of ? tok_of[col] : col;
            xq[c] = hq + tok * n_in;
            xd[c] = hd + tok * (n_in / ds4::gpu::kInt8Block);
        }
        float acc[R * NC], gu[R * NC];
        for (int k = 0; k < R * NC; ++k) acc[k] = 0.0f;
        if (live) ds4::gpu::int8_group_dot<TYPE, R, NC>(rows, n_in, ln, wide != 0, xq, xd, acc);
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

// Block (b, s): out[c * E + r] = down_e.row(r) . act(c), R rows a group, NC columns a pass; act
// as int8 columns.
template <int R, int NC, uint32_t TYPE>
__global__ void DS4_DOT_BOUNDS ds4_moe_down_int8_kernel(const uint8_t* down, uint64_t expert_bytes, uint64_t row_bytes,
                                                        int64_t F, const int8_t* aq, const float* ad,
                                                        const int32_t* active, const int32_t* n_active,
                                                        const int32_t* count, const int32_t* start, int64_t n_tokens,
                                                        int64_t E, float* out, int L, int wide) {
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
        const int8_t* xq[NC];
        const float* xd[NC];
        for (int c = 0; c < NC; ++c) {
            const int64_t col = grp.first + c0 + (c < nc ? c : 0);
            xq[c] = aq + col * F;
            xd[c] = ad + col * (F / ds4::gpu::kInt8Block);
        }
        float acc[R * NC], y[R * NC];
        for (int k = 0; k < R * NC; ++k) acc[k] = 0.0f;
        if (r0 < E) ds4::gpu::int8_group_dot<TYPE, R, NC>(rows, F, ln, wide != 0, xq, xd, acc);
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

// The plan and h's int8 columns in one launch (two small kernels in a row had each cost a launch
// on the decode's critical path): block 0 plans (gpu_moe_plan.h, up to kPlanSmallExperts experts
// and kPlanSmallPairs pairs: the launcher checks), blocks 1.. quantise h (gpu_int8.h's quantiser
// blocks 0..), the same work and bits as the two kernels.
static_assert(ds4::gpu::kPlanThreads == ds4::gpu::kInt8QuantThreads, "one block size for both");
extern "C" __global__ void ds4_moe_plan_int8_kernel(const int32_t* experts, int64_t n_pairs, int64_t NX,
                                                    int32_t* count, int32_t* start, int32_t* col_of, int32_t* tok_of,
                                                    int32_t* active, int32_t* n_active, int64_t K, int* fault,
                                                    const float* h, int64_t values, int8_t* q, float* d) {
    ds4_kernel_entry();
    const int64_t b = ds4_block_x();
    if (b == 0) {
        ds4::gpu::moe_plan_block<ds4::gpu::kPlanSmallExperts, ds4::gpu::kPlanSmallPairs>(
            experts, n_pairs, NX, count, start, col_of, tok_of, active, n_active, K, fault);
    } else {
        ds4::gpu::int8_columns_block(b - 1, h, values, 1, 0, values, values, q, d);
    }
}

#define DS4_INT8_GATE_UP(RH, NC, T)                                                                                    \
    template __global__ void ds4_moe_gate_up_int8_kernel<RH, NC, T>(                                                   \
        const uint8_t*, const uint8_t*, uint64_t, uint64_t, int64_t, const int8_t*, const float*, const int32_t*,      \
        const int32_t*, const int32_t*, const int32_t*, const int32_t*, int64_t, int64_t, double, float*, int, int);
#define DS4_INT8_DOWN(R, NC, T)                                                                                  \
    template __global__ void ds4_moe_down_int8_kernel<R, NC, T>(const uint8_t*, uint64_t, uint64_t, int64_t,       \
                                                                const int8_t*, const float*, const int32_t*,       \
                                                                const int32_t*, const int32_t*, const int32_t*,    \
                                                                int64_t, int64_t, float*, int, int);
// The routed Q2_K experts, a column a pass: one-row groups, and max_group_rows<1>() rows (gate_up:
// half of them of gate).
DS4_INT8_GATE_UP(1, 1, kQ2K)
DS4_INT8_GATE_UP(2, 1, kQ2K)
DS4_INT8_DOWN(1, 1, kQ2K)
DS4_INT8_DOWN(4, 1, kQ2K)
static_assert(ds4::gpu::max_group_rows<1>() == 4, "the instances above are for groups of 1 and 4 rows");

// The shared expert's SwiGLU output as int8 columns: value i = clamped_swiglu(gate[i], up[i]) of
// the gate and up matmuls' outputs (n_tokens columns of F, contiguous), quantised as
// gpu_int8.h's quantiser (block b: values b kInt8QuantThreads ..).
extern "C" __global__ void ds4_swiglu_int8_columns_kernel(const float* gate, const float* up, int64_t values,
                                                          double clamp, int8_t* q, float* d) {
    ds4_kernel_entry();
    const int64_t i = (int64_t)ds4_block_x() * ds4::gpu::kInt8QuantThreads + ds4_thread_x();
    const float v = i < values ? clamped_swiglu(gate[i], up[i], clamp) : 0.0f;
    ds4::gpu::int8_columns_store(i, v, values, q, d);
}

#if DS4_GPU_HOST_CODE
#include <algorithm>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {
constexpr uint32_t kQ8_0 = 8;
}  // namespace

bool int8_experts_for(const MoeMats& exp, int64_t E) {
    // never: float columns, the CPU engine's arithmetic (tests/gpu/test_gpu_forward.py holds
    // that path to the CPU, and test_gpu_int8.py the others to the float64 reference with
    // int8 columns).
    if (int8_scope() == Int8Scope::kNone) return false;
    return exp.type == kQ2K && exp.down_type == kQ2K && E % kInt8Block == 0 && exp.F % kInt8Block == 0;
}

bool int8_shared_for(const MoeMats& exp, const MoeMats& sh, int64_t E) {
    const Int8Scope how = int8_scope();
    if ((how != Int8Scope::kShared && how != Int8Scope::kAll) || !int8_experts_for(exp, E)) return false;
    return sh.type == kQ8_0 && sh.down_type == kQ8_0 && sh.F % kInt8Block == 0;
}

int64_t int8_scratch_bytes(int64_t n_tokens, int64_t E, int64_t act_per_token) {
    return int8_columns_bytes(std::max(n_tokens * E, n_tokens * act_per_token));
}

bool moe_plan_with_h() { return env_choice("DS4KIT_GPU_MOE_PLAN", {"fused", "split"}) == 0; }

namespace {
// h's int8 columns as launch_int8_columns writes them (n_tokens columns of E, contiguous: one
// column of n_tokens E values quantises alike, blocks of 32 never straddle two), with the plan.
Int8Cols launch_plan_and_h(const MoeLaunch& a, void* s) {
    const int64_t values = a.n_tokens * a.E;
    const Int8ColsOut h = int8_columns_at(a.int8, values);
    if (int8_columns_blocks(values) + 1 > 0x7fffffff) {
        throw ArgumentError(DS4_GPU_WHO ": moe plan and int8 h: " + std::to_string(values) + " values exceed the grid");
    }
    ds4_launch(ds4_moe_plan_int8_kernel, dim3((unsigned)(int8_columns_blocks(values) + 1)), dim3(kPlanThreads), s,
               a.experts, a.n_tokens * a.K, a.n_expert, a.count, a.start, a.col_of, a.tok_of, a.active, a.n_active,
               a.K, a.fault, a.h, values, h.q, h.d);
    DS4_GPU_CHECK_LAUNCH("ds4_moe_plan_int8_kernel");
    return Int8Cols{h.q, h.d};
}
}  // namespace

void launch_moe_experts_int8(const MoeLaunch& a, int64_t slots, ExpertWalk gu, ExpertWalk dn, bool with_plan,
                             void* s) {
    const MoeMats& x = a.exp;
    const int64_t P = a.n_tokens * a.K;
    const Int8Cols h = with_plan ? launch_plan_and_h(a, s) : launch_int8_columns(a.h, a.E, a.n_tokens, 1, 0, a.E, a.int8, s);
    // A prefill block takes the tensor-core GEMMs (gpu_moe_gemm_q2k.cu), with the same bits.
    const bool gemm = moe_gemm_q2k_for(a.n_tokens, gu, dn, x);
    if (gemm) {
        launch_moe_gate_up_q2k_gemm(a, slots, h, s);
    } else {
        ds4_launch(gu.rows == 1 ? ds4_moe_gate_up_int8_kernel<1, 1, kQ2K> : ds4_moe_gate_up_int8_kernel<2, 1, kQ2K>,
                   dim3(dot_row_blocks(x.F, gu.L, gu.rows), (unsigned)slots), dim3(kDotBlock), s, x.gate, x.up,
                   x.gate_up_expert_bytes, x.gate_up_row_bytes, a.E, h.q, h.d, a.active, a.n_active, a.count, a.start,
                   a.tok_of, a.n_tokens, x.F, a.clamp, a.act, gu.L, gu.wide);
        DS4_GPU_CHECK_LAUNCH("ds4_moe_gate_up_int8_kernel");
    }
    // down, on the SwiGLU output (P columns of F) quantised into the same scratch (h's codes are
    // no longer read: the stream orders the launches).
    const Int8Cols act = launch_int8_columns(a.act, x.F, P, 1, 0, x.F, a.int8, s);
    if (gemm) {
        launch_moe_down_q2k_gemm(a, slots, act, s);
        return;
    }
    ds4_launch(dn.rows == 1 ? ds4_moe_down_int8_kernel<1, 1, kQ2K> : ds4_moe_down_int8_kernel<4, 1, kQ2K>,
               dim3(dot_row_blocks(a.E, dn.L, dn.rows), (unsigned)slots), dim3(kDotBlock), s, x.down,
               x.down_expert_bytes, x.down_row_bytes, x.F, act.q, act.d, a.active, a.n_active, a.count, a.start, a.n_tokens,
               a.E, a.out, dn.L, dn.wide);
    DS4_GPU_CHECK_LAUNCH("ds4_moe_down_int8_kernel");
}

void launch_moe_shared_int8(const MoeLaunch& a, void* s) {
    // Its own int8 columns (a.int8_sh), so it can run beside the routed experts on another
    // stream: h, then the SwiGLU output (h's codes are no longer read: the stream orders them).
    const int64_t F = a.sh.F, n = a.n_tokens;
    const Int8Cols h = launch_int8_columns(a.h, a.E, n, 1, 0, a.E, a.int8_sh, s);
    const MatmulSetJob gate_up[2] = {{kQ8_0, a.sh.gate, a.sh.gate_up_row_bytes, F, a.act_sh, F},
                                     {kQ8_0, a.sh.up, a.sh.gate_up_row_bytes, F, a.up_sh, F}};
    launch_matmul_set_int8_on(gate_up, 2, a.E, h, (int)n, s);
    const int64_t values = n * F;
    const Int8ColsOut act = int8_columns_at(a.int8_sh, values);
    ds4_launch(ds4_swiglu_int8_columns_kernel, dim3((unsigned)int8_columns_blocks(values)), dim3(kInt8QuantThreads), s,
               (const float*)a.act_sh, (const float*)a.up_sh, values, a.clamp_shared, act.q, act.d);
    DS4_GPU_CHECK_LAUNCH("ds4_swiglu_int8_columns_kernel");
    launch_matmul_int8_on(a.sh.down, a.sh.down_row_bytes, F, a.E, a.E, Int8Cols{act.q, act.d}, (int)n, a.out_sh, a.E,
                          s);
}

}  // namespace gpu
}  // namespace ds4
#endif
