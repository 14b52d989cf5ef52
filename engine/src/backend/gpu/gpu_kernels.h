// Host launchers of the GPU backend's kernels, in plain C++ types (the stream is the
// runtime's stream handle as void*). Each enqueues on the stream and throws a ds4 error
// naming the kernel if the launch fails; arguments are checked by the caller
// (GpuBackend), which knows the tensor names. Pointers are device addresses. `fault` is a
// device word a kernel sets to a nonzero code when its input is invalid (a token or expert
// id out of range); the backend reads it at synchronize() (gpu_backend.cu lists the codes).
#pragma once
#include <cstdint>

#include "backend/gpu/gpu_step_pos.h"
#include "core/rope_spec.h"

namespace ds4 {
namespace gpu {

constexpr int64_t kMaxRotHost = 256;  // RoPE dims the kernels' angle tables hold (gpu_math.h kMaxRot)

// ---- gpu_matmul.cu ----
// Whether the matrix kernels decode ggml type `type` (gpu_dot.h's list).
bool matmul_type_supported(uint32_t type);
// Y[c * ldy + r] = W_row(r) . X[c * ldx .. + n_in) for r < n_rows, c < ncols, where row r
// starts at W + r * row_bytes. Float accumulation; every column is reduced exactly as it
// would be with ncols = 1 (gpu_dot.h says how). tensor_rows: the rows of the whole tensor
// (the reduction's lane count is chosen from it, so a row's result does not depend on which
// rows one call computes). grid: the IQ2_XXS codebook on the device. x_group_rows > 0: rows
// g * x_group_rows .. + x_group_rows read X + g * x_group_stride instead (a grouped matmul in
// one launch, each row's bits those of its own group's call).
void launch_matmul(uint32_t type, const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows,
                   int64_t tensor_rows, const float* X, int64_t ldx, int ncols, float* Y, int64_t ldy,
                   const uint64_t* grid, void* stream, int64_t x_group_rows = 0, int64_t x_group_stride = 0);
// One matrix of launch_matmul_set: rows 0 .. n_rows of a tensor of tensor_rows rows at W,
// Y[c * ldy + r] as launch_matmul computes it.
struct MatmulSetJob {
    uint32_t type;
    const uint8_t* W;
    uint64_t row_bytes;
    int64_t n_rows;  // the whole tensor: a set's matrices are never row slices
    float* Y;
    int64_t ldy;
};
// launch_matmul of each job over the same columns (n_in values at X + c * ldx), the bits of
// those calls, with the matrices of one type in one launch where they run one-row groups and
// ncols <= 8 (gpu_matmul.cu ds4_matmul_set_kernel); DS4KIT_GPU_MATMUL_SETS=never launches each.
void launch_matmul_set(const MatmulSetJob* jobs, int n_jobs, int64_t n_in, const float* X, int64_t ldx, int ncols,
                       const uint64_t* grid, void* stream);
// Lanes per row (32 .. 256) of gpu_dot.h's reduction for a matrix of `rows` rows of n_in.
int dot_lanes(int64_t rows, int64_t n_in);
// The kernel shape of a matmul call (the float and the int8 kernels alike): NC columns a pass,
// R rows a group, or the wide calls' kWideCols by kWideRows (wide). Chosen from the call, as
// none of it changes a bit (gpu_dot.h). One column of a matrix that takes row groups only in
// calls of several columns (row_groups_for) runs the 2-column kernel's 2-row groups (NC = 2 for
// a call of one column; the int8 launcher keeps one column and one row).
struct MatmulShape {
    int NC, R;
    bool wide;
};
MatmulShape matmul_shape(int64_t n_rows, int64_t tensor_rows, int L, int ncols, int64_t x_group_rows);
// The column batch (1, 2, 4 or 8) of a call of ncols <= 8 columns: the narrowest that holds them.
int narrow_cols_for(int ncols);
// Whether sets launch together (DS4KIT_GPU_MATMUL_SETS=auto; never: a launch per matrix, to
// measure what the sets buy), and whether a matrix of n_rows may join one: calls of up to 8
// columns of one-row groups (the attention input's projections in decode and verify).
bool matmul_sets_on();
bool matmul_set_member(int64_t n_rows, int ncols);
// Whether a matrix of `rows` rows (the tensor's; times the experts a token uses for moe) runs
// gpu_dot.h's R-row groups in a call of ncols columns: rows >= 8192 for one column, >= 4096 for
// more, or as DS4KIT_GPU_ROW_GROUPS=auto|always|never says (R changes no bit, so the rule may
// look at the call: tests/gpu compares always with never on models too small for the rule).
// Another value: ArgumentError naming the variable.
bool row_groups_for(int64_t rows, int ncols = 1);
// The x blocks of a float matrix kernel's launch (ds4_matmul_kernel, the set kernel) of NC columns
// a pass, `blocks` row blocks and gy column batches: `blocks` unless the kernel strides
// (gpu_matmul_kernels.h strided_grid(NC): one column a pass), then at most one wave
// (resident_blocks over gy, at least one a batch), each block walking row blocks b, b + grid, ... so warps go on to their next rows
// without a block's launch, and a wave's tail is a row block, not a block of blocks.
// DS4KIT_GPU_MATMUL_GRID=full launches a block per row block (to measure what it buys), =few two
// blocks (tests/gpu: on small models one wave holds every row block); no bit depends on it (each
// row's arithmetic is its own).
unsigned matmul_grid_x(const void* kernel, int NC, unsigned blocks, unsigned gy);
// (dot_wide<T>, whether rows allow the wide loads, is in gpu_dot.h.)

// ---- gpu_layout.cu ----
// n_rows Q8_0 rows of nb blocks at src (the file's layout) to dst split: each row's codes,
// then its scales (gpu_dequant.h). src and dst must not overlap.
void launch_q8_0_split(const uint8_t* src, uint8_t* dst, int64_t n_rows, int64_t nb, void* s);

// ---- gpu_norm.cu ----
struct Int8ColsOut;
// y_r = x_r / sqrt(mean(x_r^2) + eps) * w (w == nullptr: unweighted) for n_rows rows of n;
// the sum of squares in double, in a fixed order. y may equal x. int8: also y's int8 columns
// (n_rows columns of n: launch_int8_columns' codes and scales of y, written by the same kernel);
// rows must then fit rms_norm_int8_fits, else ArgumentError.
void launch_rms_norm(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y, void* stream,
                     const Int8ColsOut* int8 = nullptr);
// Whether the norm can write int8 columns of rows of n values (a multiple of 32, held in registers).
bool rms_norm_int8_fits(int64_t n);
// Whether norms write the int8 columns of the matmul they feed (DS4KIT_GPU_NORM_INT8: auto, the
// default; never: the matmul's own quantiser launch, the same bytes). Another value: ArgumentError.
bool rms_norm_int8_on();
// x[k] = (float)(x[k] * s) for k < n (the product in double, as the CPU backend).
void launch_scale(float* x, int64_t n, double s, void* stream);
void launch_add(float* y, const float* x, int64_t n, void* stream);

// ---- gpu_ops.cu ----
void launch_embed(uint32_t type, const uint8_t* table, uint64_t row_bytes, int64_t n_table, int64_t E,
                  const int32_t* tokens, int64_t n, int64_t n_copies, float* X, const uint64_t* grid, int* fault,
                  void* s);
void launch_rope_tail(float* x, int64_t n_tokens, int64_t rows_per_token, int64_t row_len, StepPos pos0,
                      const RopeSpec& spec, bool inverse, void* s);
void launch_fp8_kv_round_trip(float* x, int64_t n_rows, int64_t n, int64_t n_rot, void* s);
void launch_indexer_transform(float* x, int64_t n_rows, int64_t d, bool fp4, void* s);
void launch_hc_post(const float* y, const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, const double* split,
                    float* X_out, void* s);
void launch_hc_mean(const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, float* out, int64_t ldo, void* s);
void launch_fill(float* x, int64_t n, float v, void* s);
// *word = p (the base position of a step that may be replayed, gpu_step_pos.h).
void launch_set_pos(int64_t* word, int64_t p, void* s);
// hash: [hash_rows][hash_stride] expert ids (hash layers) or null (then bias selects).
void launch_route(const float* logits, const int32_t* tokens, int64_t n, int64_t n_expert, int64_t K,
                  const int32_t* hash, int64_t hash_rows, int64_t hash_stride, const float* bias, bool normalise,
                  double scale, int32_t* experts, float* weights, int* fault, void* s);

// ---- gpu_hc.cu ----
// The mix logits m = fn . N(flatten X) in two steps: hc_mix_partial writes, per token and
// slice of the F = n_hc * E inputs (hc_mix_slices(F) of them), each row's dot with the raw X
// (part: [n_tokens][n_mix][slices] floats) and the slice's sum of squares (part_ss:
// [n_tokens][slices] doubles); the consumers add the slices in order and scale by the norm.
int64_t hc_mix_slices(int64_t F);
void launch_hc_mix_partial(uint32_t type, const uint8_t* fn, uint64_t row_bytes, int64_t F, int64_t n_mix,
                           const float* X, int64_t n_tokens, const uint64_t* grid, float* part, double* part_ss,
                           void* s);
// out_t = sum_h w_h X_t,h with w_h = sigmoid(scale0 m_h + base_h) + eps from the first n_hc mix
// values: hc_pre's u (w = pre) and hc_head's e.
void launch_hc_collapse(const float* part, const double* part_ss, int64_t n_mix, double rms_eps, const float* X,
                        int64_t n_tokens, int64_t n_hc, int64_t E, const float* scale, const float* base,
                        double hc_eps, float* out, void* s);
// launch_hc_collapse, then launch_rms_norm of out with weight norm_w (norm_eps), in one kernel with
// the two's bits; E at most hc_collapse_norm_max_values() (more: ArgumentError).
int64_t hc_collapse_norm_max_values();
void launch_hc_collapse_norm(const float* part, const double* part_ss, int64_t n_mix, double rms_eps, const float* X,
                             int64_t n_tokens, int64_t n_hc, int64_t E, const float* scale, const float* base,
                             double hc_eps, const float* norm_w, double norm_eps, float* out, void* s);
// split: [n_tokens][2 n_hc + n_hc^2] doubles, pre, post and the Sinkhorn matrix (cpu_hc.cpp's).
void launch_hc_split(const float* part, const double* part_ss, int64_t n_mix, double rms_eps, int64_t n_tokens,
                     int64_t n_hc, int64_t E, const float* scale, const float* base, int64_t iters, double hc_eps,
                     double* split, void* s);

// ---- gpu_moe.cu ----
struct MoeMats {
    uint32_t type = 0, down_type = 0;  // gate/up, down
    const uint8_t *gate = nullptr, *up = nullptr, *down = nullptr;
    uint64_t gate_up_row_bytes = 0, gate_up_expert_bytes = 0, down_row_bytes = 0, down_expert_bytes = 0;
    int64_t F = 0;  // gate/up rows
};
struct MoeLaunch {
    MoeMats exp, sh;
    int64_t n_expert = 0, n_tokens = 0, K = 0, E = 0;
    const float* h = nullptr;
    const int32_t* experts = nullptr;
    const float* weights = nullptr;
    double clamp = 0, clamp_shared = 0;
    float* y = nullptr;
    // Scratch: count/start/active [n_expert], n_active [1], col_of/tok_of [n_tokens * K],
    // act [n_tokens * K * F], act_sh and up_sh [n_tokens * sh.F], out [n_tokens * K * E], out_sh
    // [n_tokens * E].
    int32_t *count = nullptr, *start = nullptr, *col_of = nullptr, *tok_of = nullptr;
    int32_t *active = nullptr, *n_active = nullptr;  // the chosen experts in ascending id order, and how many
    float *act = nullptr, *act_sh = nullptr, *up_sh = nullptr, *out = nullptr, *out_sh = nullptr;
    // Non-null: the routed experts (int8) and the shared expert (int8_sh) run on int8 columns
    // (gpu_moe_int8.cu), these scratches of int8_scratch_bytes holding them.
    uint8_t *int8 = nullptr, *int8_sh = nullptr;
    const uint64_t* grid = nullptr;
    int* fault = nullptr;
};
// The three parts of moe: the plan and the routed experts (into out), the shared expert (into
// out_sh; needs only h, so it may run on another stream), then y = the weighted sum (after both).
void launch_moe_routed(const MoeLaunch& a, void* s);
void launch_moe_shared(const MoeLaunch& a, void* s);
void launch_moe_combine(const MoeLaunch& a, void* s);

// ---- gpu_int8_columns.cu ----
// Which matrices take int8 columns (DS4KIT_GPU_INT8; gpu_int8.h): kNone (never: float columns,
// the CPU engine's arithmetic), kExperts (experts: the routed Q2_K experts), kShared (shared:
// those and a Q8_0 shared expert; the default of steps 21-32), kAll (all, and unset or auto
// since step 33: those and every Q8_0 matmul, gpu_matmul_int8.cu). Another value: ArgumentError
// naming the variable.
enum class Int8Scope { kNone, kExperts, kShared, kAll };
Int8Scope int8_scope();
// Where a call's int8 columns lie: column k's n codes at q + k n, its n / 32 scales at d + k n / 32.
struct Int8Cols {
    const int8_t* q;
    const float* d;
};
// Bytes launch_int8_columns writes for `values` values (codes, then the scales on 16 bytes), and
// where the scales begin.
int64_t int8_columns_bytes(int64_t values);
int64_t int8_scales_offset(int64_t values);
// The codes and scales of `values` values in such a buffer, for the kernels that write them
// (launch_int8_columns, gpu_moe_int8.cu's plan-and-h launch).
struct Int8ColsOut {
    int8_t* q;
    float* d;
};
Int8ColsOut int8_columns_at(uint8_t* out, int64_t values);
// columns x groups columns of n values (n a multiple of 32; else ArgumentError): column
// k = c groups + g is x + c ldx + g x_stride, quantised per 32 values into out (int8_columns_bytes
// of columns groups n).
Int8Cols launch_int8_columns(const float* x, int64_t ldx, int64_t columns, int64_t groups, int64_t x_stride,
                             int64_t n, uint8_t* out, void* s);

// ---- gpu_moe_int8.cu ----
// Whether the routed experts run on int8 columns: int8_scope() is not kNone, and Q2_K gate, up
// and down with E and F multiples of 32.
bool int8_experts_for(const MoeMats& exp, int64_t E);
// Whether the shared expert does too: the routed ones do, int8_scope() is kShared or kAll, and
// its gate, up and down are Q8_0 with F a multiple of 32.
bool int8_shared_for(const MoeMats& exp, const MoeMats& sh, int64_t E);
// Bytes of MoeLaunch::int8 (act_per_token: K F) or int8_sh (the shared expert's F) for a call of
// n_tokens tokens.
int64_t int8_scratch_bytes(int64_t n_tokens, int64_t E, int64_t act_per_token);
// How launch_moe_routed walks a matrix of experts (gpu_moe.cu decides): lanes per row, word
// loads, and rows per group (gate_up: rows of gate, the same of up).
struct ExpertWalk {
    int L, wide, rows;
};
// launch_moe_routed's gate, up and down on int8 columns, over `slots` slots; with_plan: the
// plan (gpu_moe_plan.h) runs in the launch that quantises h, as one more block (else the caller
// launched it before).
void launch_moe_experts_int8(const MoeLaunch& a, int64_t slots, ExpertWalk gate_up, ExpertWalk down, bool with_plan,
                             void* s);
// DS4KIT_GPU_MOE_PLAN: fused (default; the plan in the launch that quantises h) or split.
bool moe_plan_with_h();
// launch_moe_shared's, on int8 columns in a.int8_sh: the Q8_0 matmuls' kernels (the same bits in
// decode, verify and prefill), gate into a.act_sh and up into a.up_sh.
void launch_moe_shared_int8(const MoeLaunch& a, void* s);

// ---- gpu_moe_gemm_q2k.cu ----
// Whether launch_moe_experts_int8 runs the routed experts as tensor-core GEMMs (the decode
// kernels' bits): more than 8 tokens, 32 lanes a row for gate_up and down (decode's L, which the
// GEMM's chains reproduce), rows on 4-byte boundaries, and DS4KIT_GPU_MOE_GEMM not never.
bool moe_gemm_q2k_for(int64_t n_tokens, const ExpertWalk& gate_up, const ExpertWalk& down, const MoeMats& exp);
// gate_up with the SwiGLU into a.act (h: the tokens' int8 columns) and down into a.out (act: the
// SwiGLU output's int8 columns), over `slots` slots of the plan.
void launch_moe_gate_up_q2k_gemm(const MoeLaunch& a, int64_t slots, const Int8Cols& h, void* s);
void launch_moe_down_q2k_gemm(const MoeLaunch& a, int64_t slots, const Int8Cols& act, void* s);

// ---- gpu_gemm_int8.cu ----
// Whether a Q8_0 matmul on int8 columns of ncols columns runs as the prefill GEMM: more than 8
// columns, x groups of whole 16-row tiles, and DS4KIT_GPU_INT8_GEMM not never (the GEMM gives
// the GEMV's bits; never is for measuring).
bool gemm_int8_for(int ncols, int64_t x_group_rows, int64_t x_groups);
// The GEMM (gpu_gemm_int8.cu) of n_rows Q8_0 rows at W against int8 columns x.
void launch_gemm_int8(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, const Int8Cols& x,
                      int ncols, float* Y, int64_t ldy, int64_t x_group_rows, int64_t x_groups, void* s);

// ---- gpu_matmul_int8.cu ----
// Whether a matmul of `type` over n_in inputs runs on int8 columns: int8_scope() is kAll, the
// type Q8_0 and n_in a multiple of 32. Then every matmul path (launch_matmul_int8,
// launch_matmul_set_int8) takes that walk, so a row's bits never depend on the call.
bool int8_matmul_for(uint32_t type, int64_t n_in);
// Scratch bytes for a call of ncols columns of x_groups groups of n_in values.
int64_t int8_matmul_scratch_bytes(int ncols, int64_t x_groups, int64_t n_in);
// launch_matmul of a Q8_0 matrix (the split rows) on int8 columns: X's columns (each group of
// a grouped call on its own) quantised into `scratch` first. Rows of a grouped call read
// group r / x_group_rows; x_groups is how many groups X holds.
void launch_matmul_int8(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, int64_t tensor_rows,
                        const float* X, int64_t ldx, int ncols, float* Y, int64_t ldy, uint8_t* scratch, void* stream,
                        int64_t x_group_rows = 0, int64_t x_groups = 1, int64_t x_group_stride = 0);
// launch_matmul_set on int8 columns: every job Q8_0 (int8_matmul_for), X quantised once.
void launch_matmul_set_int8(const MatmulSetJob* jobs, int n_jobs, int64_t n_in, const float* X, int64_t ldx, int ncols,
                            uint8_t* scratch, void* stream);
// The two on columns quantised already (ncols columns of n_in, as launch_int8_columns writes
// them: the norm that wrote X wrote them too, launch_rms_norm's int8).
void launch_matmul_int8_on(const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows, int64_t tensor_rows,
                           const Int8Cols& x, int ncols, float* Y, int64_t ldy, void* stream);
void launch_matmul_set_int8_on(const MatmulSetJob* jobs, int n_jobs, int64_t n_in, const Int8Cols& x, int ncols,
                               void* stream);

// ---- gpu_attention_inputs.cu ----
// Backend::attention_inputs in one launch: n tokens' n_head query rows (no weight) and KV row
// (weight kv_norm) RMS-normalised, their last spec.n_rot values rotated at pos0 + i, the KV row's
// first fp8_len values FP8-rounded and the row stored as F16 in ring slot (pos0 + i) % ring_rows;
// the bits of the six calls it replaces. Rows of at most attention_inputs_max_row() values.
int64_t attention_inputs_max_row();
void launch_attention_inputs(float* Q, int64_t n, int64_t n_head, float* kv, const float* kv_norm, int64_t D,
                             double eps, StepPos pos0, const RopeSpec& spec, int64_t fp8_len, int64_t ring_rows,
                             uint16_t* ring, void* stream);

// ---- gpu_state.cu ----
void launch_kv_store(const float* kv, int64_t n, int64_t D, StepPos p0, int64_t ring_rows, uint16_t* ring, void* s);
void launch_compress_store(const float* kappa, const float* gate, int64_t ld, int64_t n, StepPos p0, int64_t W,
                           int64_t ratio, const float* ape, int64_t rows, float* ring_kv, float* ring_score, void* s);
// The rows of the windows that complete among the n tokens at p0.. (at most max_out: the grid),
// row (q + 1) / ratio - 1 of `out` for the window ending at q; mode 0 none, 1 FP8, 2 Hadamard,
// 3 Hadamard + FP4.
void launch_compress_rows(StepPos p0, int64_t n, int64_t max_out, int64_t ratio, int64_t window, int64_t rows,
                          int64_t W, int64_t Dc, const float* ring_kv, const float* ring_score, const float* norm,
                          double eps, const RopeSpec& rope, int64_t n_rot, int mode, uint16_t* out, void* s);
void launch_f16_to_f32(const uint16_t* src, float* dst, int64_t n, void* s);
void launch_f32_to_f16(const float* src, uint16_t* dst, int64_t n, void* s);

// ---- gpu_attention.cu ----
struct AttnKeys {
    const uint16_t* ring = nullptr;  // state mode: the layer's window ring (F16) ...
    int64_t ring_rows = 0, n_swa = 0;
    const uint16_t* comp = nullptr;  // ... and its compressed rows
    int64_t ratio = 0;
    const int32_t* selected = nullptr;
    int64_t top_k = 0;
    const float* rows = nullptr;  // rows mode (ring == null): T float rows
    int64_t T = 0;
};
// Scratch doubles attention needs for n tokens of n_head heads of D that see at most `most`
// keys: the per-chunk partial sums of the tokens of one launch (gpu_attention.cu).
struct AttnScratch {
    int64_t part = 0;
};
AttnScratch attention_scratch(int64_t n, int64_t n_head, int64_t D, int64_t most);
// part: scratch of attention_scratch(...).part doubles.
void launch_attention(const AttnKeys& k, StepPos p0, int64_t n, const float* Q, int64_t n_head, int64_t D,
                      const float* sinks, const RopeSpec& rope, int64_t most, double* part, float* O, void* s);
// gpu_top_k.cu: Backend::row_top_k (arguments checked by the caller).
void launch_row_top_k(const float* x, int64_t n_rows, int64_t n, int64_t k, int32_t* ids, float* vals, void* s);
// gpu_indexer.cu. scores: scratch of n * ld doubles, ld >= the most rows a token sees (the
// grid covers ld); n_head <= 256.
void launch_indexer_select(const uint16_t* idx_rows, StepPos p0, const float* q, const float* w, int64_t n,
                           int64_t n_head, int64_t d, int64_t top_k, double* scores, int64_t ld, int32_t* selected,
                           void* s);

}  // namespace gpu
}  // namespace ds4
