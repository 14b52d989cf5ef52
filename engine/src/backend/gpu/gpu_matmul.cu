// Launching the matmul kernels (gpu_matmul_kernels.h; compiled by type in gpu_matmul_types_*.cu):
// the lanes, rows per group and column batch of a call, and the sets of matrices over the same
// columns. What decides a call's kernel never changes its bits (gpu_dot.h).
#include "backend/gpu/gpu_matmul_kernels.h"

#if DS4_GPU_HOST_CODE
#include <functional>
#include <string>
#include <vector>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

namespace {

// The kernels of a weight type (gpu_matmul_types_*.cu compile them, a part of the types each).
bool find_kernels(uint32_t type, MatmulKernels* k) {
    return matmul_kernels_part0(type, k) || matmul_kernels_part1(type, k) || matmul_kernels_part2(type, k) ||
           matmul_kernels_part3(type, k) || matmul_kernels_part4(type, k);
}
MatmulKernels kernels_of(uint32_t type) {
    MatmulKernels k{};
    if (find_kernels(type, &k)) return k;
    throw UnsupportedError(DS4_GPU_WHO ": matmul has no kernel for ggml type " + std::to_string(type));
}

// Index 0..3 of a column batch of 1, 2, 4 or 8 in MatmulKernels.
int batch_index(int NC) { return NC == 1 ? 0 : NC == 2 ? 1 : NC == 4 ? 2 : 3; }

// Whether a call of more than kCols columns (a prefill block) runs kWideCols columns by
// kWideRows rows per group: each column chunk a lane loads then serves kWideRows rows (the L1
// traffic for x, not the weights' bytes, bounds these calls), with 16 sums a lane where 8
// columns by 4 rows spilled. Taken where those groups still give a wave of blocks. Columns
// and rows per group change no bit, so the rule may look at the call.
// DS4KIT_GPU_WIDE_ROWS=auto|always|never overrides it (always: every such call, as tests/gpu
// does on models too small for the rule; never: to measure what it buys).
bool wide_rows_for(int64_t n_rows, int L, int ncols, int64_t x_group_rows) {
    if (ncols <= kCols || (x_group_rows != n_rows && x_group_rows % kWideRows != 0)) return false;
    switch (env_choice("DS4KIT_GPU_WIDE_ROWS", {"auto", "always", "never"})) {
        case 1: return true;
        case 2: return false;
        default: {
            constexpr int64_t kWave = 128;  // blocks: about one per multiprocessor of a large GPU
            return (int64_t)dot_row_blocks(n_rows, L, kWideRows) * ((ncols + kWideCols - 1) / kWideCols) >= kWave;
        }
    }
}

}  // namespace

unsigned matmul_grid_x(const void* kernel, int NC, unsigned blocks, unsigned gy) {
    if (!strided_grid(NC)) return blocks;  // the kernel computes its own block only
    switch (env_choice("DS4KIT_GPU_MATMUL_GRID", {"auto", "full", "few"})) {
        case 1: return blocks;
        case 2: return blocks < 2 ? blocks : 2;  // every block walks many row blocks (tests)
        default: break;
    }
    const unsigned wave = resident_blocks(kernel, kDotBlock);
    if (wave == 0) return blocks;  // the runtime cannot say (HIP-CPU): a block per row block
    const unsigned per_column_batch = wave / gy > 0 ? wave / gy : 1;
    return blocks < per_column_batch ? blocks : per_column_batch;
}

namespace {

void launch_with(const MatmulKernels& ks, const uint8_t* W, uint64_t row_bytes, int64_t n, int64_t n_rows,
                 int64_t tensor_rows, const float* X, int64_t ldx, int ncols, float* Y, int64_t ldy,
                 const uint64_t* grid, int64_t x_group_rows, int64_t x_group_stride, void* s) {
    const int L = dot_lanes(tensor_rows, n);
    const MatmulShape sh = matmul_shape(n_rows, tensor_rows, L, ncols, x_group_rows);
    const int wide = dot_wide_at(ks.wide_alignment, W, row_bytes);
    const int x4 = dot_x_aligned(X, ldx) && dot_x_aligned(X, x_group_stride);
    const MatmulKernel k = sh.wide ? ks.wide : sh.R == 1 ? ks.rows1[batch_index(sh.NC)] : ks.rows_many[batch_index(sh.NC)];
    const unsigned gy = (unsigned)((ncols + sh.NC - 1) / sh.NC);
    const unsigned blocks = dot_row_blocks(n_rows, L, sh.R);
    const dim3 g(matmul_grid_x((const void*)k, sh.NC, blocks, gy), gy);
    ds4_launch(k, g, dim3(kDotBlock), s, W, row_bytes, n, n_rows, X, ldx, ncols, Y, ldy, grid, L, wide, x4,
               x_group_rows, x_group_stride);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_kernel");
}

void launch_set(const MatmulKernels& ks, const MatmulSetJob* const* jobs, int n_jobs, int64_t n, const float* X,
                int64_t ldx, int ncols, const uint64_t* grid, void* s) {
    const MatmulSetArgs a = matmul_set_args(jobs, n_jobs, n, ks.wide_alignment, dot_lanes);
    const int NC = narrow_cols_for(ncols);
    const int x4 = dot_x_aligned(X, ldx);
    const MatmulSetKernel k = ks.set[batch_index(NC)];
    const unsigned gy = (unsigned)((ncols + NC - 1) / NC);
    const dim3 g(matmul_grid_x((const void*)k, NC, a.blocks, gy), gy);
    ds4_launch(k, g, dim3(kDotBlock), s, a, n, X, ldx, ncols, grid, x4);
    DS4_GPU_CHECK_LAUNCH("ds4_matmul_set_kernel");
}

}  // namespace

void launch_matmul_set(const MatmulSetJob* jobs, int n_jobs, int64_t n_in, const float* X, int64_t ldx, int ncols,
                       const uint64_t* grid, void* stream) {
    if (ncols <= 0 || n_jobs <= 0) return;
    for_each_matmul_set(
        jobs, n_jobs, ncols,
        [&](const MatmulSetJob& j) {
            launch_matmul(j.type, j.W, j.row_bytes, n_in, j.n_rows, j.n_rows, X, ldx, ncols, j.Y, j.ldy, grid, stream);
        },
        [&](const MatmulSetJob* const* set, int m) {
            launch_set(kernels_of(set[0]->type), set, m, n_in, X, ldx, ncols, grid, stream);
        });
}

void for_each_matmul_set(const MatmulSetJob* jobs, int n_jobs, int ncols,
                         const std::function<void(const MatmulSetJob&)>& lone,
                         const std::function<void(const MatmulSetJob* const*, int)>& set_of) {
    const bool sets = matmul_sets_on();
    std::vector<char> done((size_t)n_jobs, 0);
    for (int i = 0; i < n_jobs; ++i) {
        if (done[i]) continue;
        const MatmulSetJob* set[kMatmulSetParts];
        int m = 0;
        if (sets && matmul_set_member(jobs[i].n_rows, ncols)) {
            for (int j = i; j < n_jobs && m < kMatmulSetParts; ++j) {
                if (!done[j] && jobs[j].type == jobs[i].type && matmul_set_member(jobs[j].n_rows, ncols)) {
                    set[m++] = &jobs[j], done[j] = 1;
                }
            }
        }
        if (m <= 1) {
            done[i] = 1;
            lone(jobs[i]);
        } else {
            set_of(set, m);
        }
    }
}

MatmulSetArgs matmul_set_args(const MatmulSetJob* const* jobs, int n_jobs, int64_t n_in, uint64_t wide_alignment,
                              int (*lanes)(int64_t rows, int64_t n_in)) {
    MatmulSetArgs a{};
    a.n_parts = n_jobs;
    int64_t b = 0;
    for (int i = 0; i < n_jobs; ++i) {
        const MatmulSetJob& j = *jobs[i];
        const int L = lanes(j.n_rows, n_in);
        a.part[i] = MatmulSetPart{j.W, j.row_bytes, j.n_rows, j.Y, j.ldy, L, dot_wide_at(wide_alignment, j.W, j.row_bytes),
                                  (unsigned)b};
        b += dot_row_blocks(j.n_rows, L, 1);
    }
    if (b > 0x7fffffff) throw ArgumentError(DS4_GPU_WHO ": matmul set of " + std::to_string(b) + " blocks exceeds the launch grid");
    a.blocks = (unsigned)b;
    return a;
}

int narrow_cols_for(int ncols) { return ncols <= 2 ? ncols : ncols <= 4 ? 4 : kCols; }

MatmulShape matmul_shape(int64_t n_rows, int64_t tensor_rows, int L, int ncols, int64_t x_group_rows) {
    if (wide_rows_for(n_rows, L, ncols, x_group_rows)) return MatmulShape{kWideCols, kWideRows, true};
    // One column of a matrix that takes row groups only in calls of several columns (auto: 4096
    // to 8191 rows, wo_b): 2-row groups through the 2-column kernel, its second column idle (no
    // one-column 2-row kernel is compiled). Chained decode 1.926 against 1.957 ms on an H100, the
    // same logits hash (step 27, reports/examples/gpu-speed-h200/27-try-ab.txt).
    if (ncols == 1 && !row_groups_for(tensor_rows, 1) && row_groups_for(tensor_rows, 2) && x_group_rows == n_rows) {
        return MatmulShape{2, max_group_rows<2>(), false};
    }
    const int NC = narrow_cols_for(ncols);
    // A group of R rows reads one x group, so R must divide a grouped call's x groups.
    const int R_many = NC == 1 ? max_group_rows<1>() : max_group_rows<kCols>();  // max_group_rows<NC>()
    const bool many = row_groups_for(tensor_rows, ncols) && (x_group_rows == n_rows || x_group_rows % R_many == 0);
    return MatmulShape{NC, many ? R_many : 1, false};
}

bool matmul_sets_on() { return env_choice("DS4KIT_GPU_MATMUL_SETS", {"auto", "never"}) == 0; }

bool matmul_set_member(int64_t n_rows, int ncols) { return ncols <= kCols && n_rows > 0 && !row_groups_for(n_rows, ncols); }

bool row_groups_for(int64_t rows, int ncols) {
    const int mode = env_choice("DS4KIT_GPU_ROW_GROUPS", {"auto", "always", "never"});
    // Calls of several columns from 4096 rows (wo_b): verify of widths 3-8 3-6% faster on an H100,
    // decode of one column no faster (step 26, reports/examples/gpu-speed-h200/26-rows4096-ab.txt).
    return mode == 0 ? rows >= (ncols > 1 ? 4096 : 8192) : mode == 1;
}

int dot_lanes(int64_t rows, int64_t n_in) {
    // About 256 blocks' worth of rows (at least 32 lanes a row), but at least four chunks of 8
    // for every lane. Fewer lanes give each more chunks in flight and a shorter final tree; on
    // the H200 decode went from 279 tok/s (2048 blocks' worth) to 292 (512) and 295 (256), and
    // prefill from 752 to 820 tok/s (2026-12-01, reports/examples/gpu-speed-h200 run 10).
    int L = 32;
    while (L < kDotBlock && (int64_t)L * rows < (int64_t)kDotBlock * 256) L *= 2;
    while (L > 32 && (int64_t)L * 4 * kChunk > n_in) L /= 2;
    return L;
}

bool matmul_type_supported(uint32_t type) {
    MatmulKernels k{};
    return find_kernels(type, &k);
}

void launch_matmul(uint32_t type, const uint8_t* W, uint64_t row_bytes, int64_t n_in, int64_t n_rows,
                   int64_t tensor_rows, const float* X, int64_t ldx, int ncols, float* Y, int64_t ldy,
                   const uint64_t* grid, void* stream, int64_t x_group_rows, int64_t x_group_stride) {
    if (n_rows <= 0 || ncols <= 0) return;
    if (x_group_rows <= 0) x_group_rows = n_rows, x_group_stride = 0;  // one x for every row
    if (n_rows > 0x7fffffff || ncols / kCols > 65535) {
        throw ArgumentError(DS4_GPU_WHO ": matmul of " + std::to_string(n_rows) + " rows x " +
                            std::to_string(ncols) + " columns exceeds the launch grid");
    }
    launch_with(kernels_of(type), W, row_bytes, n_in, n_rows, tensor_rows, X, ldx, ncols, Y, ldy, grid, x_group_rows,
                x_group_stride, stream);
}

}  // namespace gpu
}  // namespace ds4
#endif
