// AVX-512 attention kernels: up to 4 heads per pass, so each key row is read
// once for 4 heads instead of once per head (the key block is L2-resident and
// that traffic dominated). Per (head, key) the arithmetic is exactly the AVX2
// kernel's (float keys widen to double in registers): the dot's four 4-lane accumulators a0..a3 live as [a0|a1] and
// [a2|a3] in two 8-lane registers and combine the same way; the weighted sum is
// the same FMA per element in key order. Single-key dot and odd sizes use AVX2.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC bug 105593 (see quant_matmul_avx512.cpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "backend/cpu/attn_kernels.h"

namespace ds4 {
namespace detail {
namespace {

// (a0 + a1) + (a2 + a3) per lane, then (s0 + s1) + (s2 + s3): the AVX2 combine.
inline double combine(__m512d lo, __m512d hi) {
    const __m256d a01 = _mm256_add_pd(_mm512_castpd512_pd256(lo), _mm512_extractf64x4_pd(lo, 1));
    const __m256d a23 = _mm256_add_pd(_mm512_castpd512_pd256(hi), _mm512_extractf64x4_pd(hi, 1));
    alignas(32) double s[4];
    _mm256_store_pd(s, _mm256_add_pd(a01, a23));
    return (s[0] + s[1]) + (s[2] + s[3]);
}

inline __m512d load8(const float* k) { return _mm512_cvtps_pd(_mm256_loadu_ps(k)); }

template <int NH>
void scores_tile(const double* q, const float* const* rows, int64_t T, int64_t n, double* s) {
    for (int64_t t = 0; t < T; ++t) {
        const float* k = rows[t];
        __m512d lo[NH], hi[NH];
        for (int h = 0; h < NH; ++h) lo[h] = hi[h] = _mm512_setzero_pd();
        for (int64_t i = 0; i < n; i += 16) {
            const __m512d k0 = load8(k + i), k1 = load8(k + i + 8);
            for (int h = 0; h < NH; ++h) {
                lo[h] = _mm512_fmadd_pd(_mm512_loadu_pd(q + h * n + i), k0, lo[h]);
                hi[h] = _mm512_fmadd_pd(_mm512_loadu_pd(q + h * n + i + 8), k1, hi[h]);
            }
        }
        for (int h = 0; h < NH; ++h) s[h * T + t] = combine(lo[h], hi[h]);
    }
}

void scores4_avx512(const double* q, int nh, const float* const* rows, int64_t T, int64_t n, double* s) {
    if (n % 16 != 0) return scores4_generic(kAttnKernelsAvx2, q, nh, rows, T, n, s);
    switch (nh) {
        case 4: return scores_tile<4>(q, rows, T, n, s);
        case 3: return scores_tile<3>(q, rows, T, n, s);
        case 2: return scores_tile<2>(q, rows, T, n, s);
        default: return scores_tile<1>(q, rows, T, n, s);
    }
}

template <int NH>
void wsum_tile(const double* e, const float* const* rows, int64_t T, int64_t n, double* o) {
    for (int64_t i = 0; i < n; i += 32) {
        __m512d acc[NH][4];
        for (int h = 0; h < NH; ++h) {
            for (int v = 0; v < 4; ++v) acc[h][v] = _mm512_setzero_pd();
        }
        for (int64_t t = 0; t < T; ++t) {
            const float* k = rows[t] + i;
            const __m512d k0 = load8(k), k1 = load8(k + 8);
            const __m512d k2 = load8(k + 16), k3 = load8(k + 24);
            for (int h = 0; h < NH; ++h) {
                const __m512d et = _mm512_set1_pd(e[h * T + t]);
                acc[h][0] = _mm512_fmadd_pd(et, k0, acc[h][0]);
                acc[h][1] = _mm512_fmadd_pd(et, k1, acc[h][1]);
                acc[h][2] = _mm512_fmadd_pd(et, k2, acc[h][2]);
                acc[h][3] = _mm512_fmadd_pd(et, k3, acc[h][3]);
            }
        }
        for (int h = 0; h < NH; ++h) {
            for (int v = 0; v < 4; ++v) _mm512_storeu_pd(o + h * n + i + 8 * v, acc[h][v]);
        }
    }
}

void weighted_sums4_avx512(const double* e, int nh, const float* const* rows, int64_t T, int64_t n, double* o) {
    if (n % 32 != 0) return weighted_sums4_generic(kAttnKernelsAvx2, e, nh, rows, T, n, o);
    switch (nh) {
        case 4: return wsum_tile<4>(e, rows, T, n, o);
        case 3: return wsum_tile<3>(e, rows, T, n, o);
        case 2: return wsum_tile<2>(e, rows, T, n, o);
        default: return wsum_tile<1>(e, rows, T, n, o);
    }
}

}  // namespace

// Constant-initialised (function addresses only): no AVX-512 code runs at load time.
const AttnKernels kAttnKernelsAvx512 = {dot_avx2, weighted_sum_avx2, scores4_avx512, weighted_sums4_avx512,
                                        "avx512"};

}  // namespace detail
}  // namespace ds4
