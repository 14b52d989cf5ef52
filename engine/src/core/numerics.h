// Scalar numerics of the DeepSeek V4 forward pass, one definition for the CPU
// backend and the CUDA/HIP kernels (DS4_HD): F16 conversion, D's FP8-E4M3 and
// FP4-E2M1 block round trips, the Hadamard transform, the RoPE angles. Rounding
// rules follow ds4.c as documented in tests/reference/ds4_ref_numerics.py.
//
// Written so host and device round alike: no tables or std:: containers (a grid
// value is computed from its code), bit manipulation for fabs/frexp/ldexp/rint,
// min/max spelled as std::min/std::max evaluate (so NaNs take the same path), and
// only correctly rounded operations (+ - * / sqrt) outside rope_angles. Device
// compiles must not contract a*b+c into an FMA the host does not do (the GPU
// build passes nvcc --fmad=false / clang -ffp-contract=off). rope_angles needs
// pow/log, which the device gets from the CUDA/HIP math library: it is only
// usable on a device compile with the runtime headers, and the two libraries'
// pow may differ from glibc's in the last bit.
#pragma once
#include <math.h>
#include <stdint.h>

#include "core/hd.h"
#include "core/rope_spec.h"

namespace ds4 {

namespace num {

DS4_HD inline uint32_t bits_f32(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
}
DS4_HD inline float f32_of(uint32_t u) {
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
}
DS4_HD inline uint64_t bits_f64(double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, sizeof u);
    return u;
}
DS4_HD inline double f64_of(uint64_t u) {
    double d;
    __builtin_memcpy(&d, &u, sizeof d);
    return d;
}
DS4_HD inline float abs_f32(float x) { return f32_of(bits_f32(x) & 0x7fffffffu); }
DS4_HD inline double abs_f64(double x) { return f64_of(bits_f64(x) & 0x7fffffffffffffffull); }
// Exact 2^k for a normal double (-1022 <= k <= 1023).
DS4_HD inline double pow2_f64(int k) { return f64_of((uint64_t)(k + 1023) << 52); }
// std::max / std::min as the standard defines them (the first argument wins ties and NaN
// comparisons), so a NaN takes the same path on every compiler.
DS4_HD inline double max_f64(double a, double b) { return a < b ? b : a; }
DS4_HD inline double min_f64(double a, double b) { return b < a ? b : a; }

DS4_HD inline double sqrt_f64(double x) {
#if defined(__CUDA_ARCH__)
    return ::sqrt(x);  // nvcc device: correctly rounded (the default -prec-sqrt=true)
#else
    return __builtin_sqrt(x);  // host (the same instruction as std::sqrt), clang AMDGPU
#endif
}

// frexp's exponent: v = m * 2^e with m in [0.5, 1); returns whether m == 0.5 exactly.
// Zero, inf and NaN give e = 0 and false, as glibc's frexp does (m is then v itself).
DS4_HD inline bool frexp_exponent(double v, int* e) {
    uint64_t b = bits_f64(v);
    int ex = (int)((b >> 52) & 0x7ff);
    *e = 0;
    if (ex == 0x7ff || (b << 1) == 0) return false;
    int adj = 0;
    if (ex == 0) {  // subnormal: normalise exactly first
        b = bits_f64(v * pow2_f64(54));
        ex = (int)((b >> 52) & 0x7ff);
        adj = 54;
    }
    *e = ex - 1022 - adj;
    return (b & 0x000fffffffffffffull) == 0;
}

// Smallest power of two s with amax / s <= top, i.e. 2^ceil(log2(amax / top)).
DS4_HD inline double pow2_scale(double amax, double top) {
    int e = 0;
    const bool half = frexp_exponent(amax / top, &e);
    return pow2_f64(half ? e - 1 : e);
}

// The non-negative finite grids, in code order: E4M3FN has 127 magnitudes (bias 7,
// code 127 is NaN), E2M1 has 8 ({0, .5, 1, 1.5, 2, 3, 4, 6}). Every value is exact.
DS4_HD inline double e4m3_value(int code) {
    const int e = code >> 3, mant = code & 7;
    return e == 0 ? mant * pow2_f64(-9) : (1.0 + mant / 8.0) * pow2_f64(e - 7);
}
DS4_HD inline double e2m1_value(int code) {
    const int e = code >> 1, mant = code & 1;
    return e == 0 ? mant * 0.5 : (1.0 + mant / 2.0) * pow2_f64(e - 1);
}
DS4_HD inline double grid_value(bool e4m3, int code) { return e4m3 ? e4m3_value(code) : e2m1_value(code); }

// Nearest grid value to |x| (ties to the even code), saturating, sign kept. The search
// is std::lower_bound's, step for step, so a NaN lands where it did with the table.
DS4_HD inline double round_to_grid(double x, bool e4m3) {
    const int size = e4m3 ? 127 : 8;
    const double ax = min_f64(abs_f64(x), grid_value(e4m3, size - 1));
    int first = 0, count = size;
    while (count > 0) {
        const int step = count / 2;
        if (grid_value(e4m3, first + step) < ax) {
            first += step + 1;
            count -= step + 1;
        } else {
            count = step;
        }
    }
    const int hi = first < 1 ? 1 : (first > size - 1 ? size - 1 : first);
    const int lo = hi - 1;
    const double d_lo = ax - grid_value(e4m3, lo), d_hi = grid_value(e4m3, hi) - ax;
    const bool pick_hi = d_hi < d_lo || (d_hi == d_lo && hi % 2 == 0);
    const double v = grid_value(e4m3, pick_hi ? hi : lo);
    return x < 0 ? -v : v;
}

// One value of a block with scale s (block_round_trip's step, on its own for the GPU's
// one-thread-per-value kernels).
DS4_HD inline float round_trip_value(float v, double s, double top, bool e4m3) {
    const double q = min_f64(max_f64((double)v / s, -top), top);
    return (float)(round_to_grid(q, e4m3) * s);
}

DS4_HD inline void block_round_trip(float* x, int64_t n, int64_t block, double top, double amax_floor, bool e4m3) {
    for (int64_t off = 0; off < n; off += block) {
        const int64_t len = block < n - off ? block : n - off;
        double amax = 0.0;
        for (int64_t i = 0; i < len; ++i) amax = max_f64(amax, (double)abs_f32(x[off + i]));
        const double s = pow2_scale(max_f64(amax, amax_floor), top);
        for (int64_t i = 0; i < len; ++i) x[off + i] = round_trip_value(x[off + i], s, top, e4m3);
    }
}

DS4_HD inline double rope_corr_dim(const RopeSpec& p, double n_turns) {
    const double pi = 3.14159265358979323846;  // M_PI's literal
    return (double)p.n_rot * ::log((double)p.n_ctx_orig / (n_turns * 2.0 * pi)) / (2.0 * ::log(p.freq_base));
}

}  // namespace num

// IEEE half from float, round to nearest even; overflow gives inf, NaN stays NaN.
DS4_HD inline uint16_t f32_to_f16(float f) {
    const uint32_t x = num::bits_f32(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (ax < 0x38800000u) {
        // Below 2^-14: a half subnormal, |f| / 2^-24 rounded half to even, in integers:
        // |f| = m * 2^(ex - 150) with the implicit bit in m, so the quotient is m >> (126 - ex).
        const uint32_t ex = ax >> 23;
        const uint32_t m = ex ? (ax & 0x7fffffu) | 0x800000u : ax;
        const uint32_t shift = 126u - (ex ? ex : 1u);  // >= 14
        if (shift >= 25u) return (uint16_t)sign;       // below a quarter of 2^-24
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) ++q;  // q = 0x400 is the smallest normal
        return (uint16_t)(sign | q);
    }
    uint32_t h = ((((ax >> 23) - 127u + 15u)) << 10) | ((ax & 0x7fffffu) >> 13);
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carries into the exponent correctly
    return (uint16_t)(sign | h);
}

// Float from IEEE half, exact for every input (inf and NaN keep sign and payload).
DS4_HD inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    const uint32_t m = h & 0x3ffu;
    if (e == 0) return num::f32_of(num::bits_f32((float)m * num::f32_of(103u << 23)) | sign);  // m * 2^-24
    return num::f32_of(sign | (e == 31 ? (0xffu << 23) | (m << 13) : ((e - 15u + 127u) << 23) | (m << 13)));
}

// A block rounding's parameters (num::block_round_trip's), for code that splits it across
// threads (the GPU's kernels) and must use the same ones.
struct BlockRounding {
    int64_t block;
    double top, amax_floor;
    bool e4m3;
};
// FP8-E4M3 in blocks of 64: scale 2^ceil(log2(amax/448)), amax >= 1e-4. (Functions, not
// variables: device code can call them.)
DS4_HD constexpr BlockRounding fp8_e4m3_rounding() { return BlockRounding{64, 448.0, 1e-4, true}; }
// FP4-E2M1 in blocks of 32: scale 2^ceil(log2(amax/6)). ds4.c floors amax at a tiny value so
// the scale never underflows to zero.
DS4_HD constexpr BlockRounding fp4_e2m1_rounding() { return BlockRounding{32, 6.0, 7.052966104933725e-38, false}; }

// FP8-E4M3 round trip of n values (fp8_e4m3_rounding).
DS4_HD inline void fp8_e4m3_round_trip(float* x, int64_t n) {
    constexpr BlockRounding r = fp8_e4m3_rounding();
    num::block_round_trip(x, n, r.block, r.top, r.amax_floor, r.e4m3);
}

// FP4-E2M1 round trip of n values, a multiple of 32 (fp4_e2m1_rounding).
DS4_HD inline void fp4_e2m1_round_trip(float* x, int64_t n) {
    constexpr BlockRounding r = fp4_e2m1_rounding();
    num::block_round_trip(x, n, r.block, r.top, r.amax_floor, r.e4m3);
}

// In-place orthonormal Sylvester-Hadamard transform (natural order) of n = 2^k values.
DS4_HD inline void hadamard_inplace(double* x, int64_t n) {
    for (int64_t len = 1; len < n; len *= 2) {
        for (int64_t i = 0; i < n; i += 2 * len) {
            for (int64_t j = i; j < i + len; ++j) {
                const double a = x[j], b = x[j + len];
                x[j] = a + b;
                x[j + len] = a - b;
            }
        }
    }
    const double s = 1.0 / num::sqrt_f64((double)n);
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

// YaRN correction range in pair indices (ds4.c rope_yarn_corr_dims): floor of the beta_fast
// dim, ceil of the beta_slow dim, clipped to [0, n_rot-1]; 0, 0 without YaRN.
DS4_HD inline void rope_yarn_range(const RopeSpec& p, double* lo, double* hi) {
    *lo = 0.0;
    *hi = 0.0;
    if (p.ext_factor != 0.0) {
        *lo = num::max_f64(0.0, ::floor(num::rope_corr_dim(p, p.beta_fast)));
        *hi = num::min_f64((double)(p.n_rot - 1), ::ceil(num::rope_corr_dim(p, p.beta_slow)));
    }
}

// Angle of adjacent pair i at position pos (lo, hi from rope_yarn_range).
DS4_HD inline double rope_angle(double pos, const RopeSpec& p, int64_t i, double lo, double hi) {
    const double extrap = pos * ::pow(p.freq_base, -2.0 * (double)i / (double)p.n_rot);
    const double interp = p.freq_scale * extrap;
    if (p.ext_factor == 0.0) return interp;
    const double y = ((double)i - lo) / num::max_f64(0.001, hi - lo);
    const double mix = (1.0 - num::min_f64(num::max_f64(y, 0.0), 1.0)) * p.ext_factor;
    return interp * (1.0 - mix) + extrap * mix;
}

// Angle of each of the n_rot/2 adjacent pairs at position pos into theta[n_rot / 2]
// (YaRN ramp when ext_factor != 0).
DS4_HD inline void rope_angles(double pos, const RopeSpec& p, double* theta) {
    double lo, hi;
    rope_yarn_range(p, &lo, &hi);
    for (int64_t i = 0; i < p.n_rot / 2; ++i) theta[i] = rope_angle(pos, p, i, lo, hi);
}

}  // namespace ds4
