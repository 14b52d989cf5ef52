// The routed Q2_K experts of a prefill block as grouped GEMMs on the tensor cores (int8 columns;
// calls of more than 8 tokens): a block of 8 warps computes 32 rows of one chosen expert (gate_up:
// 16 of gate and the same 16 of up; down: 32) against its columns 8 at a time, the rows read once
// per 8 columns where gpu_moe_int8.cu's kernels read them once per column.
//
// Each output keeps the decode kernel's bits (gpu_int8.h lane_dot_q2k_int8, then the tree of
// group_reduce over L = 32 lanes): lane l of decode is chain l, quarter l % 4 of the 256-value
// blocks l / 4, l / 4 + 8, ..., a sub-block of 16 at a time with
//   acc = fma(dl, dx * isum, acc), acc = fma(-ml, dx * sq, acc)
// (isum: the 16 codes' integer dot with the column's int8 values; sq: those values' sum). Here
// warp w takes the blocks w, w + 8, ... (a step stages 8 consecutive blocks, one a warp) and
// holds the 4 chains of its quarters; isum, exact, comes from the tensor cores (one m16n8k32
// product whose second half of A is zero, so it covers one sub-block of 16) or, without them,
// from dp4a; the fmas are decode's in decode's order; the 32 chains then meet in the same tree.
// So prefill == verify == decode bit for bit (tests/gpu_host_sim/moe_gemm_q2k_sim.cpp checks it
// against the decode kernels on the host, tests/gpu/test_gpu_int8.py on the GPU).
// What is not decode's arithmetic is kept out of the loop (step 35: 41.5 -> 27 SASS instructions
// a tensor-core product): a sub-block's scales (dl, ml) are decoded once a row by one lane into a
// warp table that the 4 lanes sharing a fragment row read, and the integer dots start at
// kSmallIntBias, so each is a float with one subtraction.
#include "backend/gpu/gpu_moe_kernels.h"  // Group, slot_group, clamped_swiglu
#include "backend/gpu/gpu_mma_s8.h"

#include <stdint.h>

namespace {
constexpr int kQ2kThreads = 256, kQ2kWarps = kQ2kThreads / 32;
constexpr int kQ2kLanes = 32;             // decode's L: 8 chains of blocks x 4 quarters
constexpr int kQ2kStep = kQ2kWarps;       // blocks a step, one a warp: warp w is chain residue w
static_assert(kQ2kStep * 4 == kQ2kLanes, "a warp holds the 4 quarter chains of one block residue");
constexpr int kQ2kBlockWords = 21;        // a Q2_K block: 16 scale bytes, 64 code bytes, d and dmin
constexpr int kQ2kRows = 32, kQ2kCols = 8;  // two 16-row tiles x one 8-column tile
// Words from one staged row (column) to the next: 12 (4) more than a multiple of 32, so a
// fragment load's lanes (row g: word t, g < 8, t < 4) hit 32 different banks.
constexpr int kQ2kPA = kQ2kBlockWords * kQ2kStep + 4, kQ2kPB = 64 * kQ2kStep + 4;
static_assert(kQ2kPA % 32 == 12 && kQ2kPB % 32 == 4, "conflict-free fragment loads");
static_assert(kQ2kPA % 4 == 0 && kQ2kPB % 4 == 0 && kQ2kRows * kQ2kPA % 4 == 0, "16-byte stores of the staging");
constexpr int kQ2kTreeP = kQ2kLanes + 1;  // a (row, column)'s 32 chain sums, padded
constexpr int kQ2kShared = kQ2kRows * kQ2kPA + kQ2kCols * kQ2kPB;  // words of A and B
static_assert(kQ2kRows * kQ2kCols * kQ2kTreeP + kQ2kRows * kQ2kCols <= kQ2kShared, "the trees fit the staging");
constexpr int kQ2kBqFloats = kQ2kCols * 16 * kQ2kStep, kQ2kBdFloats = kQ2kCols * 8 * kQ2kStep;  // dx * sq, dx
constexpr int kQ2kTableFloats = 2 * kQ2kRows * 2;  // a warp's scale table: 2 buffers x 32 rows x (dl, ml)
// All static shared memory (sm, Bq, Bd, the tables, col_tok) within the 48 KB a static block may have.
static_assert(4 * (kQ2kShared + kQ2kBqFloats + kQ2kBdFloats + kQ2kWarps * kQ2kTableFloats) + 8 * kQ2kCols <= 48 * 1024,
              "static shared memory");
template <bool KEEP>
struct Keep {  // whether a walk of the chains keeps its sums (a compile-time tag)
    static constexpr bool value = KEEP;
};
struct alignas(8) Floats2 {  // one 8-byte shared-memory load
    float x, y;
};
struct alignas(16) Floats4 {  // one 16-byte shared-memory load
    float x, y, z, w;
};

// c[i] (lane 4 g + t): gpu_int8.h kSmallIntBias plus the integer dot of sub-block s of staged
// block e of tile rows g + 8 (i / 2) with columns 2 t + i % 2; A: the tile's staged rows (kQ2kPA
// words apart), the sub-block's codes at bits `shift` of the 4 words from word `aw` of a row; B:
// the columns' int8 values (kQ2kPB words apart), the sub-block's at word `bw`. a: the lane's two
// code words (rows g and g + 8, word t).
__device__ inline void subblock_isum(const uint32_t* A, const uint32_t* B, int aw, int bw, int shift, const uint32_t a[2],
                                     int lane, int c[4]) {
    const int g = lane / 4, t = lane % 4;
#if DS4_MMA_TENSOR
    (void)A;
    (void)aw;
    const uint32_t fa[4] = {(a[0] >> shift) & 0x03030303u, (a[1] >> shift) & 0x03030303u, 0u, 0u};
    const uint32_t fb[2] = {B[g * kQ2kPB + bw + t], 0u};
    ds4::gpu::mma_s8_fragments(fa, fb, c, ds4::gpu::kSmallIntBias);
#else
    (void)a;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const uint32_t* ar = A + (g + 8 * (i / 2)) * kQ2kPA + aw;
        const uint32_t* bc = B + (2 * t + i % 2) * kQ2kPB + bw;
        int s = ds4::gpu::kSmallIntBias;
        for (int m = 0; m < 4; ++m) s = ds4::gpu::dot4_s8((ar[m] >> shift) & 0x03030303u, bc[m], s);
        c[i] = s;
    }
#endif
}

// Block (b, s): the s-th chosen expert's rows (GATE_UP: gate and up rows 16 b .. 16 b + 15,
// y = act, the clamped SwiGLU; else rows 32 b .., y = out) against its columns, the int8 columns
// xq, xd of n_in values (GATE_UP: column c is token tok_of[c]'s h; else column c itself), y[c *
// rows + r]. wide: the rows allow 16-byte loads.
template <bool GATE_UP>
__device__ inline void moe_gemm_q2k(const uint8_t* w0, const uint8_t* w1, uint64_t expert_bytes, uint64_t row_bytes,
                                    int64_t n_in, int64_t rows, const int8_t* xq, const float* xd,
                                    const int32_t* active, const int32_t* n_active, const int32_t* count,
                                    const int32_t* start, const int32_t* tok_of, int64_t n_tokens, double clamp,
                                    float* y, int wide) {
    alignas(16) __shared__ uint32_t sm[kQ2kShared];
    alignas(16) __shared__ float Bq[kQ2kBqFloats], Bd[kQ2kBdFloats];  // dx * sq a sub-block, dx a 32
    alignas(16) __shared__ float Ts[kQ2kWarps * kQ2kTableFloats];  // each warp's scale table
    __shared__ int64_t col_tok[kQ2kCols];
    uint32_t* As = sm;
    uint32_t* Bs = sm + kQ2kRows * kQ2kPA;
    const Group grp = slot_group<kQ2kCols>(active, n_active, count, start, ds4_block_y(), n_tokens);
    if (grp.e < 0) return;  // the whole block
    const int t = (int)ds4_thread_x(), warp = t / 32, lane = t % 32, g = lane / 4, tq = lane % 4;
    const int64_t r0 = (int64_t)ds4_block_x() * (GATE_UP ? kQ2kRows / 2 : kQ2kRows);
    const int64_t nb = n_in / 256, nb32 = n_in / ds4::gpu::kInt8Block;
    auto row_ptr = [&](int rho) {  // staged row rho; rows past the expert's end repeat its last
        const int64_t r = GATE_UP ? r0 + rho % 16 : r0 + rho;
        const uint8_t* base = GATE_UP && rho >= 16 ? w1 : w0;
        return base + (uint64_t)grp.e * expert_bytes + (uint64_t)(r < rows ? r : rows - 1) * row_bytes;
    };
    for (int64_t c0 = 0; c0 < grp.m; c0 += kQ2kCols) {
        const int nc = grp.m - c0 < kQ2kCols ? (int)(grp.m - c0) : kQ2kCols;
        if (t < kQ2kCols) {  // columns past the group's repeat its first (their sums are dropped)
            const int64_t col = grp.first + c0 + (t < nc ? t : 0);
            col_tok[t] = tok_of ? tok_of[col] : col;
        }
        float acc[2][4][4];  // [tile][quarter][C element]: the chains of warp `warp`
#pragma unroll
        for (int k = 0; k < 2; ++k) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
#pragma unroll
                for (int i = 0; i < 4; ++i) acc[k][q][i] = 0.0f;
            }
        }
        for (int64_t b0 = 0; b0 < nb; b0 += kQ2kStep) {
            ds4_sync_block();  // col_tok written; the last step's (or pass's) reads of sm done
            // Stage blocks b0 .. b0 + 7 of the 32 rows (zeros past the row's end) ...
            const int64_t live_blocks = nb - b0 < kQ2kStep ? nb - b0 : kQ2kStep;
            if (wide && live_blocks == kQ2kStep) {
                constexpr int chunks = kQ2kBlockWords * kQ2kStep / 4;  // 16 bytes
                for (int c = t; c < kQ2kRows * chunks; c += kQ2kThreads) {
                    const int rho = c / chunks, k = c % chunks;
                    const ds4::gpu::uint4_t v = reinterpret_cast<const ds4::gpu::uint4_t*>(row_ptr(rho) + 84 * b0)[k];
                    *reinterpret_cast<ds4::gpu::uint4_t*>(As + rho * kQ2kPA + 4 * k) = v;  // 16-byte aligned
                }
            } else {
                constexpr int words = kQ2kBlockWords * kQ2kStep;
                for (int c = t; c < kQ2kRows * words; c += kQ2kThreads) {
                    const int rho = c / words, k = c % words;
                    As[rho * kQ2kPA + k] =
                        k < kQ2kBlockWords * live_blocks ? ds4::gpu::rd32(row_ptr(rho) + 84 * b0 + 4 * k) : 0u;
                }
            }
            // ... and the columns' values of those blocks, a sub-block of 16 a thread, with its
            // dx * sq (decode's dsq) and dx; columns 2 t and 2 t + 1 side by side for one load.
            for (int c = t; c < kQ2kCols * kQ2kStep * 16; c += kQ2kThreads) {
                const int col = c / (16 * kQ2kStep), e = (c / 16) % kQ2kStep, s = c % 16;
                const int64_t b = b0 + e;
                ds4::gpu::uint4_t v{0, 0, 0, 0};
                float dx = 0.0f;
                if (b < nb) {
                    v = *reinterpret_cast<const ds4::gpu::uint4_t*>(xq + col_tok[col] * n_in + 256 * b + 16 * s);
                    dx = xd[col_tok[col] * nb32 + 8 * b + s / 2];
                }
                *reinterpret_cast<ds4::gpu::uint4_t*>(Bs + col * kQ2kPB + 64 * e + 4 * s) = v;
                int sq = ds4::gpu::dot4_s8(0x01010101u, v.a, ds4::gpu::kSmallIntBias);
                sq = ds4::gpu::dot4_s8(0x01010101u, v.b, sq);
                sq = ds4::gpu::dot4_s8(0x01010101u, v.c, sq);
                sq = ds4::gpu::dot4_s8(0x01010101u, v.d, sq);
                Bq[(e * 16 + s) * kQ2kCols + col] = dx * ds4::gpu::biased_int_to_f32(sq);
                if (s % 2 == 0) Bd[(e * 8 + s / 2) * kQ2kCols + col] = dx;
            }
            ds4_sync_block();
            // Warp `warp`'s block e = warp: chain (quarter q) of decode lane 4 e + q, sub-blocks
            // 8 (q / 2) + 2 j + q % 2 for j = 0..3 in order. A block past the row's end leaves
            // the chains as they are (decode's lane has no such block): the warp skips it.
            const int e = warp;
            // The scales of row `lane` (gpu_dequant.h q2k_scale_min_fma, as decode), one sub-block a
            // step into the warp's table, where the 4 lanes of each fragment row read them: a
            // lane's own rows would cost each of the 4 the same decoding.
            const ds4::gpu::Q2kScales own = ds4::gpu::q2k_scales(As[lane * kQ2kPA + kQ2kBlockWords * e + 20]);
            const uint8_t* sc_own = reinterpret_cast<const uint8_t*>(As + lane * kQ2kPA + kQ2kBlockWords * e);
            // Table slot of row rho = 16 k + 8 h + g: (k * 8 + g) * 4 + 2 h, so a lane's rows g and g + 8
            // of tile k (dl, ml of each) are one 16-byte load; two buffers, a sub-block's each.
            float* tab = Ts + warp * kQ2kTableFloats;
            const int own_slot = ((lane / 16) * 8 + lane % 8) * 4 + 2 * ((lane / 8) % 2);
            auto walk = [&](auto keep) {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const int aw = kQ2kBlockWords * e + 4 + 4 * q;  // the quarter's code words: bytes 16 + 16 q
                    uint32_t a[2][2];
#pragma unroll
                    for (int k = 0; k < 2; ++k) {
#pragma unroll
                        for (int h = 0; h < 2; ++h) a[k][h] = As[(16 * k + g + 8 * h) * kQ2kPA + aw + tq];
                    }
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        const int s = 8 * (q / 2) + 2 * j + q % 2;
                        float* tb = tab + (j % 2) * kQ2kTableFloats / 2;  // buffer j % 2: read two sub-blocks ago
                        {
                            float ml;
                            tb[own_slot] = ds4::gpu::q2k_scale_min_fma(own, sc_own[s], &ml);
                            tb[own_slot + 1] = ml;
                        }
                        ds4_sync_warp();
                        const Floats2 dxs = *reinterpret_cast<const Floats2*>(Bd + (e * 8 + s / 2) * kQ2kCols + 2 * tq);
                        const Floats2 dsqs = *reinterpret_cast<const Floats2*>(Bq + (e * 16 + s) * kQ2kCols + 2 * tq);
                        const float dx[2] = {dxs.x, dxs.y}, dsq[2] = {dsqs.x, dsqs.y};
#pragma unroll
                        for (int k = 0; k < 2; ++k) {
                            int bsum[4];  // kSmallIntBias + the sub-block's integer dots
                            subblock_isum(As + 16 * k * kQ2kPA, Bs, aw, 64 * e + 4 * s, 2 * j, a[k], lane, bsum);
                            const Floats4 sm4 = *reinterpret_cast<const Floats4*>(tb + (k * 8 + g) * 4);
                            const float dl[2] = {sm4.x, sm4.z}, ml[2] = {sm4.y, sm4.w};
                            if constexpr (decltype(keep)::value) {
#pragma unroll
                                for (int i = 0; i < 4; ++i) {
                                    const float v = ds4_fmaf(dl[i / 2], dx[i % 2] * ds4::gpu::biased_int_to_f32(bsum[i]), acc[k][q][i]);
                                    acc[k][q][i] = ds4_fmaf(-ml[i / 2], dsq[i % 2], v);
                                }
                            }
                        }
                    }
                }
            };
            if (b0 + e < nb) walk(Keep<true>{});
#if defined(__HIP_CPU_RT__)
            // HIP-CPU's warp barrier is a block barrier (and the host simulation's mma takes every
            // thread of the block): the skipping warp goes through the same barriers, keeping nothing.
            else walk(Keep<false>{});
#endif
        }
        // The 32 chains of each (row, column) into the tree of group_reduce (p[x] + p[x + s], s =
        // 16 .. 1), chain 4 e + q at T[(row * 8 + column) * kQ2kTreeP + 4 e + q].
        ds4_sync_block();
        float* T = reinterpret_cast<float*>(sm);
        float* Y = T + kQ2kRows * kQ2kCols * kQ2kTreeP;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int rho = 16 * k + g + 8 * (i / 2), col = 2 * tq + i % 2;
                    T[(rho * kQ2kCols + col) * kQ2kTreeP + 4 * warp + q] = acc[k][q][i];
                }
            }
        }
        ds4_sync_block();
        {
            const int rho = t / kQ2kCols, col = t % kQ2kCols;  // a thread an output
            float p[kQ2kLanes];
#pragma unroll
            for (int x = 0; x < kQ2kLanes; ++x) p[x] = T[(rho * kQ2kCols + col) * kQ2kTreeP + x];
#pragma unroll
            for (int level = 1; level < kQ2kLanes; level *= 2) {  // s = 16, 8, .., 1 (a counted loop unrolls)
                const int s = kQ2kLanes / 2 / level;
#pragma unroll
                for (int x = 0; x < s; ++x) p[x] = p[x] + p[x + s];
            }
            if constexpr (GATE_UP) {
                Y[t] = p[0];
            } else {
                const int64_t r = r0 + rho;
                if (r < rows && col < nc) y[(grp.first + c0 + col) * rows + r] = p[0];
            }
        }
        if constexpr (GATE_UP) {
            ds4_sync_block();
            if (t < kQ2kRows / 2 * kQ2kCols) {  // gate row rho's output, up row rho's 16 rows on
                const int rho = t / kQ2kCols, col = t % kQ2kCols;
                const int64_t r = r0 + rho;
                if (r < rows && col < nc) {
                    y[(grp.first + c0 + col) * rows + r] = clamped_swiglu(Y[t], Y[t + kQ2kRows / 2 * kQ2kCols], clamp);
                }
            }
        }
    }
}
}  // namespace

extern "C" __global__ void DS4_DOT_BOUNDS ds4_moe_gate_up_q2k_gemm_kernel(
    const uint8_t* gate, const uint8_t* up, uint64_t expert_bytes, uint64_t row_bytes, int64_t n_in, int64_t F,
    const int8_t* hq, const float* hd, const int32_t* active, const int32_t* n_active, const int32_t* count,
    const int32_t* start, const int32_t* tok_of, int64_t n_tokens, double clamp, float* act, int wide) {
    ds4_kernel_entry();
    moe_gemm_q2k<true>(gate, up, expert_bytes, row_bytes, n_in, F, hq, hd, active, n_active, count, start, tok_of,
                       n_tokens, clamp, act, wide);
}

extern "C" __global__ void DS4_DOT_BOUNDS ds4_moe_down_q2k_gemm_kernel(
    const uint8_t* down, uint64_t expert_bytes, uint64_t row_bytes, int64_t F, int64_t E, const int8_t* aq,
    const float* ad, const int32_t* active, const int32_t* n_active, const int32_t* count, const int32_t* start,
    int64_t n_tokens, float* out, int wide) {
    ds4_kernel_entry();
    moe_gemm_q2k<false>(down, nullptr, expert_bytes, row_bytes, F, E, aq, ad, active, n_active, count, start, nullptr,
                        n_tokens, 0.0, out, wide);
}

#if DS4_GPU_HOST_CODE
#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

bool moe_gemm_q2k_for(int64_t n_tokens, const ExpertWalk& gate_up, const ExpertWalk& down, const MoeMats& exp) {
    // DS4KIT_GPU_MOE_GEMM=never keeps prefill on the one-column kernels (the same bits: to measure).
    if (env_choice("DS4KIT_GPU_MOE_GEMM", {"auto", "never"}) == 1) return false;
    const auto words = [](const void* base, uint64_t row_bytes, uint64_t expert_bytes) {
        return dot_wide_at(4, base, row_bytes | expert_bytes) != 0;
    };
    return n_tokens > kNarrowCols && gate_up.L == kQ2kLanes && down.L == kQ2kLanes &&
           words(exp.gate, exp.gate_up_row_bytes, exp.gate_up_expert_bytes) &&
           words(exp.up, exp.gate_up_row_bytes, exp.gate_up_expert_bytes) &&
           words(exp.down, exp.down_row_bytes, exp.down_expert_bytes);
}

void launch_moe_gate_up_q2k_gemm(const MoeLaunch& a, int64_t slots, const Int8Cols& h, void* s) {
    const MoeMats& x = a.exp;
    const uint64_t stride = x.gate_up_row_bytes | x.gate_up_expert_bytes;
    const int wide = dot_wide_at(16, x.gate, stride) && dot_wide_at(16, x.up, stride);
    ds4_launch(ds4_moe_gate_up_q2k_gemm_kernel, dim3((unsigned)((x.F + kQ2kRows / 2 - 1) / (kQ2kRows / 2)), (unsigned)slots),
               dim3(kQ2kThreads), s, x.gate, x.up, x.gate_up_expert_bytes, x.gate_up_row_bytes, a.E, x.F, h.q, h.d,
               a.active, a.n_active, a.count, a.start, a.tok_of, a.n_tokens, a.clamp, a.act, wide);
    DS4_GPU_CHECK_LAUNCH("ds4_moe_gate_up_q2k_gemm_kernel");
}

void launch_moe_down_q2k_gemm(const MoeLaunch& a, int64_t slots, const Int8Cols& act, void* s) {
    const MoeMats& x = a.exp;
    const int wide = dot_wide_at(16, x.down, x.down_row_bytes | x.down_expert_bytes);
    ds4_launch(ds4_moe_down_q2k_gemm_kernel, dim3((unsigned)((a.E + kQ2kRows - 1) / kQ2kRows), (unsigned)slots),
               dim3(kQ2kThreads), s, x.down, x.down_expert_bytes, x.down_row_bytes, x.F, a.E, act.q, act.d, a.active,
               a.n_active, a.count, a.start, a.n_tokens, a.out, wide);
    DS4_GPU_CHECK_LAUNCH("ds4_moe_down_q2k_gemm_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
