// Portable attention kernels (the plain statement of attn_kernels.h's order) and
// dispatch. std::fma is the hardware instruction through libm where the CPU has one
// (else libm's exact software fma): the same single rounding as the SIMD kernels.
#include "backend/cpu/attn_kernels.h"

#include <cmath>

#include "common/cpu_features.h"

namespace ds4 {
namespace detail {
namespace {

double dot_scalar(const double* q, const float* k, int64_t n) {
    const int64_t n16 = n - n % 16;
    double a[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < n16; i += 16) {
        for (int l = 0; l < 16; ++l) a[l] = std::fma(q[i + l], (double)k[i + l], a[l]);
    }
    double s[4];
    for (int l = 0; l < 4; ++l) s[l] = (a[l] + a[4 + l]) + (a[8 + l] + a[12 + l]);
    double r = (s[0] + s[1]) + (s[2] + s[3]);
    for (int64_t i = n16; i < n; ++i) r = std::fma(q[i], (double)k[i], r);
    return r;
}

void weighted_sum_scalar(const double* e, const float* const* rows, int64_t T, int64_t n, double* o) {
    for (int64_t i = 0; i < n; ++i) o[i] = 0.0;
    for (int64_t t = 0; t < T; ++t) {
        const float* k = rows[t];
        for (int64_t i = 0; i < n; ++i) o[i] = std::fma(e[t], (double)k[i], o[i]);
    }
}

void scores4_scalar(const double* q, int nh, const float* const* rows, int64_t T, int64_t n, double* s);
void weighted_sums4_scalar(const double* e, int nh, const float* const* rows, int64_t T, int64_t n, double* o);

}  // namespace

const AttnKernels kAttnKernelsScalar = {dot_scalar, weighted_sum_scalar, scores4_scalar, weighted_sums4_scalar,
                                        "scalar"};

void scores4_generic(const AttnKernels& k, const double* q, int nh, const float* const* rows, int64_t T, int64_t n,
                     double* s) {
    for (int h = 0; h < nh; ++h) {
        for (int64_t t = 0; t < T; ++t) s[h * T + t] = k.dot(q + h * n, rows[t], n);
    }
}

void weighted_sums4_generic(const AttnKernels& k, const double* e, int nh, const float* const* rows, int64_t T,
                            int64_t n, double* o) {
    for (int h = 0; h < nh; ++h) k.weighted_sum(e + h * T, rows, T, n, o + h * n);
}

namespace {
void scores4_scalar(const double* q, int nh, const float* const* rows, int64_t T, int64_t n, double* s) {
    scores4_generic(kAttnKernelsScalar, q, nh, rows, T, n, s);
}
void weighted_sums4_scalar(const double* e, int nh, const float* const* rows, int64_t T, int64_t n, double* o) {
    weighted_sums4_generic(kAttnKernelsScalar, e, nh, rows, T, n, o);
}
}  // namespace

}  // namespace detail

const AttnKernels& attn_kernels() {
#if defined(DS4_X86)
    static const AttnKernels& k = cpu_has_avx512()           ? detail::kAttnKernelsAvx512
                                  : cpu_has_avx2_fma_f16c() ? detail::kAttnKernelsAvx2
                                                            : detail::kAttnKernelsScalar;
#else
    static const AttnKernels& k = detail::kAttnKernelsScalar;
#endif
    return k;
}

}  // namespace ds4
