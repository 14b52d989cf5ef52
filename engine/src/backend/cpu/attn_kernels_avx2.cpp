// AVX2/FMA/F16C attention kernels: same bits as the portable ones (see
// attn_kernels.h): 4 accumulators of 4 double lanes hold lanes 0..15.
#include <immintrin.h>

#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/cpu_numerics.h"

namespace ds4 {
namespace detail {

double dot_avx2(const double* q, const double* k, int64_t n) {
    const int64_t n16 = n - n % 16;
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n16; i += 16) {
        a0 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i), _mm256_loadu_pd(k + i), a0);
        a1 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i + 4), _mm256_loadu_pd(k + i + 4), a1);
        a2 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i + 8), _mm256_loadu_pd(k + i + 8), a2);
        a3 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i + 12), _mm256_loadu_pd(k + i + 12), a3);
    }
    alignas(32) double s[4];
    _mm256_store_pd(s, _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    double r = (s[0] + s[1]) + (s[2] + s[3]);
    for (int64_t i = n16; i < n; ++i) r += q[i] * k[i];
    return r;
}

// Output columns in chunks of 32 held in registers across the t loop; every o[i]
// still sums t = 0..T-1 in order from 0, like the portable kernel.
void weighted_sum_avx2(const double* e, const double* K, int64_t T, int64_t n, double* o) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256d acc[8];
        for (int v = 0; v < 8; ++v) acc[v] = _mm256_setzero_pd();
        for (int64_t t = 0; t < T; ++t) {
            const __m256d et = _mm256_set1_pd(e[t]);
            const double* k = K + t * n + i;
            for (int v = 0; v < 8; ++v) acc[v] = _mm256_fmadd_pd(et, _mm256_loadu_pd(k + 4 * v), acc[v]);
        }
        for (int v = 0; v < 8; ++v) _mm256_storeu_pd(o + i + 4 * v, acc[v]);
    }
    for (; i + 4 <= n; i += 4) {
        __m256d acc = _mm256_setzero_pd();
        for (int64_t t = 0; t < T; ++t) acc = _mm256_fmadd_pd(_mm256_set1_pd(e[t]), _mm256_loadu_pd(K + t * n + i), acc);
        _mm256_storeu_pd(o + i, acc);
    }
    for (; i < n; ++i) {
        double acc = 0.0;
        for (int64_t t = 0; t < T; ++t) acc += e[t] * K[t * n + i];
        o[i] = acc;
    }
}

void f16_row_avx2(const uint16_t* src, double* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
        _mm256_storeu_pd(dst + i, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
        _mm256_storeu_pd(dst + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
    }
    for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

namespace {
void scores4_avx2(const double* q, int nh, const double* K, int64_t T, int64_t n, double* s);
void weighted_sums4_avx2(const double* e, int nh, const double* K, int64_t T, int64_t n, double* o);
}  // namespace

const AttnKernels kAttnKernelsAvx2 = {dot_avx2, weighted_sum_avx2, f16_row_avx2, scores4_avx2, weighted_sums4_avx2,
                                      "avx2"};

namespace {
void scores4_avx2(const double* q, int nh, const double* K, int64_t T, int64_t n, double* s) {
    scores4_generic(kAttnKernelsAvx2, q, nh, K, T, n, s);
}
void weighted_sums4_avx2(const double* e, int nh, const double* K, int64_t T, int64_t n, double* o) {
    weighted_sums4_generic(kAttnKernelsAvx2, e, nh, K, T, n, o);
}
}  // namespace

}  // namespace detail
}  // namespace ds4
