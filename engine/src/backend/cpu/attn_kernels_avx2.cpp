// AVX2/FMA/F16C attention kernels: same bits as the portable ones (see
// attn_kernels.h): 4 accumulators of 4 double lanes hold lanes 0..15.
#include <immintrin.h>

#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/cpu_numerics.h"

namespace ds4 {
namespace detail {
namespace {

inline __m256d ld4(const float* k) { return _mm256_cvtps_pd(_mm_loadu_ps(k)); }

double dot_avx2(const double* q, const float* k, int64_t n) {
    const int64_t n16 = n - n % 16;
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n16; i += 16) {
        a0 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i), ld4(k + i), a0);
        a1 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i + 4), ld4(k + i + 4), a1);
        a2 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i + 8), ld4(k + i + 8), a2);
        a3 = _mm256_fmadd_pd(_mm256_loadu_pd(q + i + 12), ld4(k + i + 12), a3);
    }
    alignas(32) double s[4];
    _mm256_store_pd(s, _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    double r = (s[0] + s[1]) + (s[2] + s[3]);
    for (int64_t i = n16; i < n; ++i) r += q[i] * (double)k[i];
    return r;
}

void axpy_avx2(double e, const float* k, double* o, int64_t n) {
    const __m256d ev = _mm256_set1_pd(e);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(o + i, _mm256_fmadd_pd(ev, ld4(k + i), _mm256_loadu_pd(o + i)));
    for (; i < n; ++i) o[i] += e * (double)k[i];
}

void f16_row_avx2(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
    for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

}  // namespace

const AttnKernels kAttnKernelsAvx2 = {dot_avx2, axpy_avx2, f16_row_avx2, "avx2"};

}  // namespace detail
}  // namespace ds4
