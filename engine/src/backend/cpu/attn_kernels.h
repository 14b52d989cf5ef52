// Inner loops of attention and indexer scoring: key rows (F16 values held as
// float, so every conversion is exact) against double queries (float values),
// reduced in double. Keys are given as row pointers: the window ring and the
// selected compressed rows are not contiguous. Chosen once per process:
// avx512 / avx2 when the CPU has them, else portable.
//
// The bits (the definition every level follows: portable, AVX2, AVX-512, a future
// NEON one); fma is the single-rounding fused multiply-add, in double:
// dot: element i (i < n16 = n - n % 16) goes to lane i % 16 as a_l = fma(q, k, a_l),
// each lane in element order from +0; lanes combine as
// s_l = (a_l + a_{4+l}) + (a_{8+l} + a_{12+l}), then r = (s_0 + s_1) + (s_2 + s_3);
// the last n % 16 elements follow in order as r = fma(q, k, r). (With float-valued
// queries the products are exact in double and fma equals multiply + add.)
// weighted sum: o[i] = fma(e[t], k_t[i], o[i]) over the keys t = 0..T-1 in order,
// from o[i] = +0 (e is not a float value: the fma matters).
// Every level gives these bits, independent of the head grouping.
#pragma once
#include <cstdint>

namespace ds4 {

struct AttnKernels {
    // sum_i q[i] * k[i] in the fixed order above.
    double (*dot)(const double* q, const float* k, int64_t n);
    // o[i] = sum_t e[t] * rows[t][i], t = 0..T-1 in order, starting from 0.
    void (*weighted_sum)(const double* e, const float* const* rows, int64_t T, int64_t n, double* o);
    // nh <= 4 heads at once (key rows read once for all of them):
    // s[h*T + t] = dot(q + h*n, rows[t], n); o[h*n + i] = weighted sum with e + h*T.
    void (*scores4)(const double* q, int nh, const float* const* rows, int64_t T, int64_t n, double* s);
    void (*weighted_sums4)(const double* e, int nh, const float* const* rows, int64_t T, int64_t n, double* o);
    const char* name;
};

const AttnKernels& attn_kernels();

namespace detail {
extern const AttnKernels kAttnKernelsScalar;
#if defined(DS4_X86)
extern const AttnKernels kAttnKernelsAvx2;
extern const AttnKernels kAttnKernelsAvx512;
// The AVX2 single-head kernels, shared by the AVX-512 table.
double dot_avx2(const double* q, const float* k, int64_t n);
void weighted_sum_avx2(const double* e, const float* const* rows, int64_t T, int64_t n, double* o);
#endif
// Head-at-a-time scores4 / weighted_sums4 built from dot / weighted_sum.
void scores4_generic(const AttnKernels& k, const double* q, int nh, const float* const* rows, int64_t T, int64_t n,
                     double* s);
void weighted_sums4_generic(const AttnKernels& k, const double* e, int nh, const float* const* rows, int64_t T,
                            int64_t n, double* o);
}  // namespace detail

}  // namespace ds4
