// AVX2/FMA attention kernels: same bits as the portable ones (see
// attn_kernels.h): 4 accumulators of 4 double lanes hold lanes 0..15; float keys
// widen to double in registers (exact). The scalar tails say std::fma rather than
// rely on the compiler contracting a * b + c (it did; now it must).
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/attn_kernels.h"

namespace ds4 {
namespace detail {

namespace {
inline __m256d load4(const float* k) { return _mm256_cvtps_pd(_mm_loadu_ps(k)); }
}  // namespace

double dot_avx2(const double* q, const float* k, int64_t n) {
    const int64_t n16 = n - n % 16;
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n16; i += 16) {
        a0 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i), load4(k + i), a0);
        a1 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i + 4), load4(k + i + 4), a1);
        a2 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i + 8), load4(k + i + 8), a2);
        a3 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i + 12), load4(k + i + 12), a3);
    }
    alignas(32) double s[4];
    _mm256_store_pd(s, _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    double r = (s[0] + s[1]) + (s[2] + s[3]);
    for (int64_t i = n16; i < n; ++i) r = std::fma(q[i], (double)k[i], r);
    return r;
}

// Output columns in chunks of 32 held in registers across the t loop; every o[i]
// still sums t = 0..T-1 in order from 0, like the portable kernel.
void weighted_sum_avx2(const double* e, const float* const* rows, int64_t T, int64_t n, double* o) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256d acc[8];
        for (int v = 0; v < 8; ++v) acc[v] = _mm256_setzero_pd();
        for (int64_t t = 0; t < T; ++t) {
            const __m256d et = _mm256_set1_pd(e[t]);
            const float* k = rows[t] + i;
            for (int v = 0; v < 8; ++v) acc[v] = _mm256_fmadd_pd(et, load4(k + 4 * v), acc[v]);
        }
        for (int v = 0; v < 8; ++v) _mm256_storeu_pd(o + i + 4 * v, acc[v]);
    }
    for (; i + 4 <= n; i += 4) {
        __m256d acc = _mm256_setzero_pd();
        for (int64_t t = 0; t < T; ++t) acc = _mm256_fmadd_pd(_mm256_set1_pd(e[t]), load4(rows[t] + i), acc);
        _mm256_storeu_pd(o + i, acc);
    }
    for (; i < n; ++i) {
        double acc = 0.0;
        for (int64_t t = 0; t < T; ++t) acc = std::fma(e[t], (double)rows[t][i], acc);
        o[i] = acc;
    }
}

namespace {
void scores4_avx2(const double* q, int nh, const float* const* rows, int64_t T, int64_t n, double* s) {
    scores4_generic(kAttnKernelsAvx2, q, nh, rows, T, n, s);
}
void weighted_sums4_avx2(const double* e, int nh, const float* const* rows, int64_t T, int64_t n, double* o) {
    weighted_sums4_generic(kAttnKernelsAvx2, e, nh, rows, T, n, o);
}
}  // namespace

const AttnKernels kAttnKernelsAvx2 = {dot_avx2, weighted_sum_avx2, scores4_avx2, weighted_sums4_avx2, "avx2"};

}  // namespace detail
}  // namespace ds4
