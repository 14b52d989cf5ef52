// The prefill GEMM on int8 columns (gpu_gemm_int8.cu) run on the host (sim_runtime.h) against
// the GEMV kernel of gpu_matmul_int8.cu, whose bits decode and verify give: every output bit
// for bit, for rows of 1 to 256 blocks (chains without blocks, chains of different lengths,
// whole and partial 8-block steps), 9 to 45 columns (partial column tiles), rows that are not a
// multiple of a block's 16, 16-byte, 8-byte and byte row loads, and a grouped call (two groups
// of 128 rows). Built twice by tests/engine/test_gpu_kernels_host_sim.py: with the dp4a tile product
// (HIP's path) and, through gemm_int8_mma_sim.cpp, with the tensor-core fragments as the CUDA
// path loads them and the mma.sync product as the PTX ISA defines it (gpu_mma_s8.h). Prints one
// line per case; exit status 1 if any differs. Where its copies can be asynchronous (16-byte
// rows, whole steps) the pipelined kernel (two buffers, gpu_cp_async.h) runs too, twice: its
// copies landing as late as the PTX ISA allows (a read before the wait sees stale bytes) and as
// early (at issue: a refill of a buffer still being read shows).
#define DS4_CP_ASYNC_EMULATE 1
#include "sim_runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_gemm_int8.cu"
#include "backend/gpu/gpu_int8_columns.cu"
#include "backend/gpu/gpu_matmul_int8.cu"
#include "int8_sim_common.h"

namespace {

// The GEMM as launch_gemm_int8 launches it (16 rows x 32 columns a block).
// Which kernel: the one-buffer GEMM, or the pipelined one with its copies landing late or early.
enum class Kernel { one_buffer, pipe_late, pipe_early };

std::vector<float> gemm(const Q8Rows& w, const Cols& c, int64_t ncols, int mode, Kernel k, int64_t x_group_rows = 0,
                        int64_t x_groups = 1) {
    std::vector<float> y((size_t)(ncols * w.rows), -7.0f);
    const int64_t values = ncols * x_groups * w.n;
    const int64_t xg = x_group_rows > 0 ? x_group_rows : w.rows;
    ds4::gpu::g_cp_async_immediate = k == Kernel::pipe_early;
    sim_launch((unsigned)((w.rows + 15) / 16), (unsigned)((ncols + 31) / 32), 256, [&] {
        if (k == Kernel::one_buffer) {
            ds4_gemm_int8_kernel(w.bytes.data(), w.row_bytes, w.n, w.rows, c.q(), c.d(values), (int)ncols, y.data(),
                                 w.rows, mode, xg, x_groups);
        } else {
            ds4_gemm_int8_pipe_kernel(w.bytes.data(), w.row_bytes, w.n, w.rows, c.q(), c.d(values), (int)ncols,
                                      y.data(), w.rows, mode, xg, x_groups);
        }
    });
    return y;
}

void gemm_case(int64_t rows, int64_t n, int64_t ncols, int mode, int64_t groups = 1) {
    const int64_t nb = n / 32;
    const std::string name = std::string(kTilePath) + ": " + std::to_string(rows) + " rows of " + std::to_string(n) + " (" +
                             std::to_string(nb) + " blocks), " + std::to_string(ncols) + " columns, " +
                             (mode == 2 ? "16-byte" : mode == 1 ? "8-byte" : "byte") + " loads" +
                             (groups > 1 ? ", " + std::to_string(groups) + " groups" : "") +
                             ": the GEMV's bits";
    std::mt19937_64 rng((uint64_t)(rows * 7 + n * 3 + ncols + mode));
    const Q8Rows w = random_q8(rows, n, rng);
    const int64_t group_rows = rows / groups, stride = n + 64, ldx = groups * stride;
    const std::vector<float> x = columns_of(ldx, ncols, rng);
    const Cols c = quantise(x, ldx, ncols, groups, stride, n);
    const std::vector<float> want = groups > 1 ? run<4, 1>(w, c, ncols, 1, group_rows, groups) : run<4, 1>(w, c, ncols, 1);
    // The pipelined kernel where launch_gemm_int8 would take it (16-byte rows, whole 8-block steps).
    const bool pipe = mode == 2 && n % 256 == 0;
    for (const Kernel k : {Kernel::one_buffer, Kernel::pipe_late, Kernel::pipe_early}) {
        if (k != Kernel::one_buffer && !pipe) continue;
        const std::vector<float> got =
            groups > 1 ? gemm(w, c, ncols, mode, k, group_rows, groups) : gemm(w, c, ncols, mode, k);
        const int64_t bad = first_bit_difference(want, got);
        const std::string which = k == Kernel::one_buffer ? ""
                                  : k == Kernel::pipe_late ? " (two buffers, copies landing late)"
                                                           : " (two buffers, copies landing at issue)";
        report(bad < 0, name + which,
               bad < 0 ? "" : "column " + std::to_string(bad / rows) + " row " + std::to_string(bad % rows) + ": " +
                                  std::to_string(got[(size_t)bad]) + " against " + std::to_string(want[(size_t)bad]));
    }
}

}  // namespace

int main() {
    gemm_case(300, 1024, 32, 2);    // q_b's rows: 32 blocks, four whole steps; nineteen row tiles, the last partial
    gemm_case(130, 4096, 45, 2);    // two column tiles, the second partial
    gemm_case(77, 1056, 9, 0);      // 33 blocks: chain 0 of 5 blocks, the others of 4; a partial step
    gemm_case(64, 96, 20, 1);       // 3 blocks: five chains without any
    gemm_case(40, 320, 33, 0);      // 10 blocks across two steps
    gemm_case(256, 512, 12, 2, 2);  // two groups of 128 rows, each on its own columns
    gemm_case(50, 2048, 40, 2);     // 64 blocks
    gemm_case(90, 8192, 32, 2);     // wo_b's rows: 256 blocks, 32 steps
    gemm_case(70, 1088, 17, 0);     // 34 blocks: the last step has two
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
