// Hyper-connection kernels of the GPU backend (cpu_hc.cpp's per-token part; the mix logits
// m = fn . N(flatten X) come from the backend's rms_norm and matmul, tokens as columns).
// Blocks (token, s): every block forms the token's split (sigmoids, Sinkhorn) in double
// exactly as the CPU writes it (the same bits in each block; block 0 stores it), then
// collapses its slice of kSlice of the E elements, u_k = sum_h w_h X_h[k] in h order in
// double. One block per token had left a decode step's 16K-value collapse to 128 threads.
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"

#include <stdint.h>

namespace {
[[maybe_unused]] constexpr int kThreads = 64;  // the launchers' block size (unused in the device pass)
constexpr int64_t kSlice = 256;                 // elements of E a block collapses
constexpr int kMaxHc = 16;
constexpr int kMaxSplit = 2 * kMaxHc + kMaxHc * kMaxHc;

// One Sinkhorn half-step by the whole block: dst = src with every row (rows) or column of the
// n x n matrix divided by (its sum + eps), the sum in index order from 0 as cpu_hc.cpp's
// row_norm/col_norm; then a barrier. The caller alternates two buffers, so each half-step
// has one barrier (a copy back had cost a second).
__device__ void normalise_lines(const double* src, double* dst, int64_t n, double hc_eps, bool rows) {
    const int64_t t0 = ds4_thread_x(), T = ds4_block_dim_x(), nn = n * n;
    for (int64_t k = t0; k < nn; k += T) {
        const int64_t first = rows ? (k / n) * n : k % n, step = rows ? 1 : n;
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j) sum += src[first + j * step];
        dst[k] = src[k] / (sum + hc_eps);
    }
    ds4_sync_block();
}

// hc_split_from_mix (cpu_hc.cpp) by the whole block: a thread per value of the n x n matrix
// (and of pre/post), with a barrier between reading a row or column and writing it. Every
// sum is the serial one, in the same order (each thread of a row or column adds the same
// values from 0), so the split has the serial code's bits. `tmp` is shared memory of n * n
// doubles; split is shared memory too.
__device__ void hc_split_from_mix(const float* m, int64_t n, const float* scale, const float* base, int64_t iters,
                                  double hc_eps, double* split, double* tmp) {
    const int64_t t0 = ds4_thread_x(), T = ds4_block_dim_x(), nn = n * n;
    double* pre = split;
    double* post = split + n;
    double* M = split + 2 * n;
    for (int64_t i = t0; i < n; i += T) {
        pre[i] = ds4::gpu::sigmoid((double)scale[0] * m[i] + base[i]) + hc_eps;
        post[i] = 2.0 * ds4::gpu::sigmoid((double)scale[1] * m[n + i] + base[n + i]);
    }
    for (int64_t k = t0; k < nn; k += T) M[k] = (double)scale[2] * m[2 * n + k] + base[2 * n + k];
    ds4_sync_block();
    // Row softmax: tmp = exp(M - row max), then M = tmp / row sum + eps.
    for (int64_t k = t0; k < nn; k += T) {
        const int64_t r = k / n;
        double mx = -INFINITY;
        for (int64_t c = 0; c < n; ++c) mx = ds4::num::max_f64(mx, M[r * n + c]);
        tmp[k] = ::exp(M[k] - mx);
    }
    ds4_sync_block();
    for (int64_t k = t0; k < nn; k += T) {
        const int64_t r = k / n;
        double sum = 0.0;
        for (int64_t c = 0; c < n; ++c) sum += tmp[r * n + c];
        M[k] = tmp[k] / sum + hc_eps;
    }
    ds4_sync_block();
    double *cur = M, *next = tmp;
    auto half_step = [&](bool rows) {  // cur -> next, then next is the current matrix
        normalise_lines(cur, next, n, hc_eps, rows);
        double* const done = next;
        next = cur, cur = done;
    };
    for (int64_t it = 0; it < (iters > 1 ? iters : 1); ++it) {
        if (it > 0) half_step(true);  // rounds after the first: rows, then columns
        half_step(false);
    }
    if (cur != M) {
        for (int64_t k = t0; k < nn; k += T) M[k] = cur[k];
        ds4_sync_block();
    }
}

// out[i] for i in slice y of [0, E).
__device__ void collapse(const double* w, const float* Xt, int64_t n_hc, int64_t E, float* out) {
    const int64_t s = ds4_block_y(), end = (s + 1) * kSlice < E ? (s + 1) * kSlice : E;
    for (int64_t i = s * kSlice + ds4_thread_x(); i < end; i += ds4_block_dim_x()) {
        double acc = 0.0;
        for (int64_t h = 0; h < n_hc; ++h) acc += w[h] * (double)Xt[h * E + i];
        out[i] = (float)acc;
    }
}
}  // namespace

extern "C" __global__ void ds4_hc_pre_kernel(const float* mix, const float* X, int64_t n_hc, int64_t E, int64_t n_mix,
                                             const float* scale, const float* base, int64_t iters, double hc_eps,
                                             float* u, double* split) {
    __shared__ double sp[kMaxSplit];
    __shared__ double tmp[kMaxHc * kMaxHc];
    const int64_t t = ds4_block_x(), SS = 2 * n_hc + n_hc * n_hc;
    hc_split_from_mix(mix + t * n_mix, n_hc, scale, base, iters, hc_eps, sp, tmp);
    if (ds4_block_y() == 0) {
        for (int64_t k = ds4_thread_x(); k < SS; k += ds4_block_dim_x()) split[t * SS + k] = sp[k];
    }
    collapse(sp, X + t * n_hc * E, n_hc, E, u + t * E);  // pre_h are the first n_hc values
}

// w_h = sigmoid(m_h * scale0 + base_h) + eps, then the collapse (hc_head).
extern "C" __global__ void ds4_hc_head_kernel(const float* mix, const float* X, int64_t n_hc, int64_t E,
                                              const float* scale, const float* base, double hc_eps, float* e) {
    __shared__ double w[kMaxHc];
    const int64_t t = ds4_block_x();
    if (ds4_thread_x() == 0) {
        for (int64_t h = 0; h < n_hc; ++h) {
            w[h] = ds4::gpu::sigmoid((double)mix[t * n_hc + h] * scale[0] + base[h]) + hc_eps;
        }
    }
    ds4_sync_block();
    collapse(w, X + t * n_hc * E, n_hc, E, e + t * E);
}

#if DS4_GPU_HOST_CODE
#include <string>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

static void check_hc(int64_t n_hc, const char* op) {
    if (n_hc < 1 || n_hc > kMaxHc) {
        throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + ": " + std::to_string(n_hc) + " streams (1.." +
                            std::to_string(kMaxHc) + " supported)");
    }
}

static dim3 tokens_by_slices(int64_t E, int64_t n_tokens, const char* op) {
    const int64_t slices = (E + kSlice - 1) / kSlice;
    if (slices > 65535 || n_tokens > 0x7fffffff) {
        throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + ": " + std::to_string(n_tokens) + " tokens of " +
                            std::to_string(E) + " values exceed the launch grid");
    }
    return dim3((unsigned)n_tokens, (unsigned)(slices > 0 ? slices : 1));
}

void launch_hc_pre_split(const float* mix, const float* X, int64_t n_tokens, int64_t n_hc, int64_t E, int64_t n_mix,
                         const float* scale, const float* base, int64_t iters, double hc_eps, float* u, double* split,
                         void* s) {
    check_hc(n_hc, "hc_pre");
    if (n_tokens <= 0) return;
    ds4_launch(ds4_hc_pre_kernel, tokens_by_slices(E, n_tokens, "hc_pre"), dim3(kThreads), s, mix, X, n_hc, E, n_mix, scale, base,
               iters, hc_eps, u, split);
    DS4_GPU_CHECK_LAUNCH("ds4_hc_pre_kernel");
}

void launch_hc_head_collapse(const float* mix, const float* X, int64_t n_tokens, int64_t n_hc, int64_t E,
                             const float* scale, const float* base, double hc_eps, float* e, void* s) {
    check_hc(n_hc, "hc_head");
    if (n_tokens <= 0) return;
    ds4_launch(ds4_hc_head_kernel, tokens_by_slices(E, n_tokens, "hc_head"), dim3(kThreads), s, mix, X, n_hc, E, scale, base, hc_eps,
               e);
    DS4_GPU_CHECK_LAUNCH("ds4_hc_head_kernel");
}

}  // namespace gpu
}  // namespace ds4
#endif
