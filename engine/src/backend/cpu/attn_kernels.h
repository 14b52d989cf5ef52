// Inner loops of attention and indexer scoring: keys (F16 values held as
// double) against double queries (float values), reduced in double. Two implementations, chosen once per process
// (avx2 when the CPU has AVX2+FMA+F16C, else portable), that give the SAME
// bits: a float*float product is exact in double, so an FMA rounds exactly like
// the separate multiply and add; the summation order is spelled out below and
// both follow it.
//
// dot order: element i (i < n16 = n - n % 16) goes to lane i % 16, each lane in
// element order; lanes combine as s_l = (a_l + a_{4+l}) + (a_{8+l} + a_{12+l}),
// then (s_0 + s_1) + (s_2 + s_3); the last n % 16 elements are added after, in order.
#pragma once
#include <cstdint>

namespace ds4 {

struct AttnKernels {
    // sum_i q[i] * k[i] in the fixed order above.
    double (*dot)(const double* q, const double* k, int64_t n);
    // o[i] = sum_t e[t] * K[t*n + i], t = 0..T-1 in order, starting from 0.
    void (*weighted_sum)(const double* e, const double* K, int64_t T, int64_t n, double* o);
    // dst[i] = F16 src[i] as double (exact).
    void (*f16_to_f64_row)(const uint16_t* src, double* dst, int64_t n);
    const char* name;
};

const AttnKernels& attn_kernels();

namespace detail {
extern const AttnKernels kAttnKernelsScalar;
#if defined(DS4_X86)
extern const AttnKernels kAttnKernelsAvx2;
#endif
}  // namespace detail

}  // namespace ds4
