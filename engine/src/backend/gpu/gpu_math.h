// Double-precision libm functions in device code, and the RoPE helpers the kernels share.
// Include it before core/numerics.h (whose rope_angles calls ::pow, ::log, ::floor, ::ceil).
//
// With the CUDA or HIP headers the device math library provides these. The device-only
// HIP compile check (-nogpuinc, no ROCm) has no device declarations at all, so this header
// declares device overloads there on ROCm's ocml entry points (clang overloads on __host__ /
// __device__): the code compiles to gfx1151 assembly; a real HIP build uses ROCm's headers.
#pragma once
#include <math.h>

#include "backend/gpu/gpu_compat.h"

#if !DS4_GPU_HAVE_RUNTIME
// ROCm's device library (ocml) functions, as its headers declare them; -S never links them.
extern "C" __device__ double __ocml_exp_f64(double);
extern "C" __device__ double __ocml_log_f64(double);
extern "C" __device__ double __ocml_log1p_f64(double);
extern "C" __device__ double __ocml_pow_f64(double, double);
extern "C" __device__ double __ocml_cos_f64(double);
extern "C" __device__ double __ocml_sin_f64(double);
__device__ inline double exp(double x) { return __ocml_exp_f64(x); }
__device__ inline double log(double x) { return __ocml_log_f64(x); }
__device__ inline double log1p(double x) { return __ocml_log1p_f64(x); }
__device__ inline double pow(double a, double b) { return __ocml_pow_f64(a, b); }
__device__ inline double floor(double x) { return __builtin_floor(x); }
__device__ inline double ceil(double x) { return __builtin_ceil(x); }
__device__ inline double cos(double x) { return __ocml_cos_f64(x); }
__device__ inline double sin(double x) { return __ocml_sin_f64(x); }
#endif

#include "core/numerics.h"

namespace ds4 {
namespace gpu {

constexpr int kMaxRot = 256;  // RoPE dims a kernel's shared angle table holds (checked by the launchers)
constexpr int kRopeShared = kMaxRot + kMaxRot / 2;  // doubles: cos/sin pairs, then the angles

// cs[2i], cs[2i+1] = cos, sin of pair i's angle at pos (n_rot / 2 pairs), as the CPU's
// cpu_rope_cos_sin: every thread computes the YaRN range and then the angles of a share of
// the pairs (core/numerics.h rope_angle, the CPU's function). cs is shared memory of
// kRopeShared doubles; ends with a barrier.
__device__ inline void rope_cos_sin_block(double pos, const RopeSpec& spec, double* cs) {
    const int t = (int)ds4_thread_x(), T = (int)ds4_block_dim_x();
    double lo, hi;
    ds4::rope_yarn_range(spec, &lo, &hi);
    for (int i = t; i < spec.n_rot / 2; i += T) {
        const double a = ds4::rope_angle(pos, spec, i, lo, hi);
        cs[2 * i] = ::cos(a);
        cs[2 * i + 1] = ::sin(a);
    }
    ds4_sync_block();
}

// Rotates pair i of the last n_rot values of a row (cpu_rope_row), in double.
__device__ inline void rope_pair(float* row, int64_t row_len, int64_t n_rot, const double* cs, int64_t i,
                                 bool inverse) {
    float* tail = row + (row_len - n_rot);
    const double c = cs[2 * i], s = inverse ? -cs[2 * i + 1] : cs[2 * i + 1];
    const double x0 = tail[2 * i], x1 = tail[2 * i + 1];
    tail[2 * i] = (float)(x0 * c - x1 * s);
    tail[2 * i + 1] = (float)(x0 * s + x1 * c);
}

// core/numerics.h hadamard_inplace by the whole block: each stage's butterflies are
// independent, so threads take a share of them between barriers; the same additions and
// the same final scaling give the serial code's bits. n is a power of two (the only rows
// transformed are the indexer's, whose key length ds4_hparams checks). x is shared memory;
// begins and ends with a barrier.
__device__ inline void hadamard_block(double* x, int64_t n) {
    const int64_t t = ds4_thread_x(), T = ds4_block_dim_x();
    ds4_sync_block();
    for (int64_t len = 1; len < n; len *= 2) {
        for (int64_t b = t; b < n / 2; b += T) {
            const int64_t j = (b / len) * 2 * len + b % len;
            const double a = x[j], c = x[j + len];
            x[j] = a + c;
            x[j + len] = a - c;
        }
        ds4_sync_block();
    }
    const double s = 1.0 / ds4::num::sqrt_f64((double)n);
    for (int64_t i = t; i < n; i += T) x[i] *= s;
    ds4_sync_block();
}

// core/numerics.h block_round_trip of x[0..n) (shared memory) by the whole block, a thread per
// value: each value's block amax (a maximum: order-free) from shared memory, the block's scale,
// then the value rounded on its own (round_trip_value); the new values are written after a
// barrier, so no thread reads a value another has already rounded. The serial code's bits: one
// thread rounding a block of 64 FP8 values had taken 57 us of compress_rows on the H200.
// At most PER values a thread (n <= PER x threads). Begins and ends with a barrier.
template <int PER>
__device__ inline void block_round_trip_block(float* x, int64_t n, ds4::BlockRounding r) {
    const int64_t t = ds4_thread_x(), T = ds4_block_dim_x(), block = r.block;
    ds4_sync_block();
    float y[PER];
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const int64_t i = t + k * T;
        if (i >= n) continue;
        const int64_t off = i - i % block, len = block < n - off ? block : n - off;
        double amax = 0.0;
        for (int64_t j = 0; j < len; ++j) amax = ds4::num::max_f64(amax, (double)ds4::num::abs_f32(x[off + j]));
        const double s = ds4::num::pow2_scale(ds4::num::max_f64(amax, r.amax_floor), r.top);
        y[k] = ds4::num::round_trip_value(x[i], s, r.top, r.e4m3);
    }
    ds4_sync_block();
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const int64_t i = t + k * T;
        if (i < n) x[i] = y[k];
    }
    ds4_sync_block();
}

// Two branches so neither exp overflows (cpu_sigmoid).
__device__ inline double sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + ::exp(-x));
    const double e = ::exp(x);
    return e / (1.0 + e);
}

// The CPU's attention/indexer dot (backend/cpu/attn_kernels.h), step for step: element
// i < n16 goes to lane i % 16 by fma from +0, lanes combine pairwise, the tail follows
// by fma. q holds float values, so with the key widened exactly every product is exact.
template <class Key>
__device__ inline double attn_dot(const float* q, Key key, int64_t n) {
    const int64_t n16 = n - n % 16;
    double a[16];
    for (int l = 0; l < 16; ++l) a[l] = 0.0;
    for (int64_t i = 0; i < n16; i += 16) {
        for (int l = 0; l < 16; ++l) a[l] = __builtin_fma((double)q[i + l], key(i + l), a[l]);
    }
    double s[4];
    for (int l = 0; l < 4; ++l) s[l] = (a[l] + a[4 + l]) + (a[8 + l] + a[12 + l]);
    double r = (s[0] + s[1]) + (s[2] + s[3]);
    for (int64_t i = n16; i < n; ++i) r = __builtin_fma((double)q[i], key(i), r);
    return r;
}

}  // namespace gpu
}  // namespace ds4
