// AVX2 + FMA + F16C dot kernels (compiled with those flags only; chosen at run
// time by quant_dot.cpp).
//
// Each span (one block, or 64 elements of a float type) is dequantised once
// into an aligned buffer, then FMA'd against every requested column. Per column
// the sequence of operations is fixed: two 8-lane accumulators fed 16 elements
// at a time, an 8-element step into the first if 8 remain, single-element FMAs
// into a scalar for the last < 8, and one fixed horizontal sum. Nothing depends
// on ncols, so dot_row_cols is bitwise equal to dot_row per column.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "quant/dequant_blocks.h"
#include "quant/quant_dot.h"
#include "quant/quant_span.h"

namespace ds4 {
namespace {

inline float hsum_fixed(__m256 a0, __m256 a1, __m128 tail) {
    const __m256 v = _mm256_add_ps(a0, a1);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(_mm_add_ss(s, tail));
}

// Integer lanes of 8 bytes -> float lanes times a broadcast scale.
inline __m256 i8x8_to_ps(__m128i bytes8, __m256 scale) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes8)), scale);
}

// Decode a 16-byte nibble block through a 16-entry int8 table into 32 floats:
// low nibbles (elements 0..15) times s0, high nibbles (16..31) times s1.
inline void nibbles_lut_to_ps(const uint8_t* qs, __m128i lut, float s0, float s1, float* y) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(q, m));
    const __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(q, 4), m));
    const __m256 v0 = _mm256_set1_ps(s0), v1 = _mm256_set1_ps(s1);
    _mm256_store_ps(y + 0, i8x8_to_ps(lo, v0));
    _mm256_store_ps(y + 8, i8x8_to_ps(_mm_srli_si128(lo, 8), v0));
    _mm256_store_ps(y + 16, i8x8_to_ps(hi, v1));
    _mm256_store_ps(y + 24, i8x8_to_ps(_mm_srli_si128(hi, 8), v1));
}

// Span dequantisers: fill y (aligned, kMaxSpan floats) or point w at the row
// itself (F32), and return the span length.
struct SpanSource {
    uint32_t type;
    const uint8_t* row;
    RowSpans spans;

    int get(int64_t s, float* y, const float** w) const {
        const uint8_t* b = spans.bytes(row, s);
        const int len = spans.length(s);
        *w = y;
        switch (type) {
            case 0:  // F32: use the row in place
                *w = reinterpret_cast<const float*>(b);
                return len;
            case 1: {  // F16
                int j = 0;
                for (; j + 8 <= len; j += 8) {
                    _mm256_store_ps(y + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * j))));
                }
                for (; j < len; ++j) y[j] = fp16_to_f32(rd_u16(b + 2 * j));
                return len;
            }
            case 30: {  // BF16
                int j = 0;
                for (; j + 8 <= len; j += 8) {
                    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * j)));
                    _mm256_store_ps(y + j, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
                }
                for (; j < len; ++j) y[j] = bf16_to_f32(rd_u16(b + 2 * j));
                return len;
            }
            case 8: {  // Q8_0
                const __m256 d = _mm256_set1_ps(fp16_to_f32(rd_u16(b)));
                for (int j = 0; j < 32; j += 8) {
                    _mm256_store_ps(y + j, i8x8_to_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + j)), d));
                }
                return 32;
            }
            case 103: {  // Q8_0_ROCMFPX: int8 codes, one scale
                const __m256 d = _mm256_set1_ps(rocmfp::scale(b[32]));
                for (int j = 0; j < 32; j += 8) {
                    _mm256_store_ps(y + j, i8x8_to_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + j)), d));
                }
                return 32;
            }
            case 2: {  // Q4_0: nibble - 8
                const float d = fp16_to_f32(rd_u16(b));
                const __m128i lut = _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
                nibbles_lut_to_ps(b + 2, lut, d, d, y);
                return 32;
            }
            case 39: {  // MXFP4
                const __m128i lut = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values));
                const float d = e8m0_to_f32_half(b[0]);
                nibbles_lut_to_ps(b + 1, lut, d, d, y);
                return 32;
            }
            case 100:
            case 101: {  // ROCmFP4: sign bit 3, magnitude {0,1,2,3,4,6,8,10}
                const __m128i lut = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 10, 0, -1, -2, -3, -4, -6, -8, -10);
                const float s0 = rocmfp::scale(b[16]);
                const float s1 = type == 100 ? rocmfp::scale(b[17]) : s0;
                nibbles_lut_to_ps(b, lut, s0, s1, y);
                return 32;
            }
            default:  // Q4_K, Q2_K, IQ2_XXS, ROCmFP 102/104/107: portable block code
                return spans.dequant(row, s, y);
        }
    }
};

void dot_cols_avx2_impl(const SpanSource& src, const float* X, int64_t ldx, int ncols, float* out) {
    alignas(32) float tmp[kMaxSpan];
    constexpr int kCols = 4;
    const int64_t nspans = src.spans.count();
    for (int c0 = 0; c0 < ncols; c0 += kCols) {
        const int nc = std::min(kCols, ncols - c0);
        __m256 a0[kCols], a1[kCols];
        __m128 tail[kCols];
        for (int c = 0; c < kCols; ++c) {
            a0[c] = a1[c] = _mm256_setzero_ps();
            tail[c] = _mm_setzero_ps();
        }
        for (int64_t s = 0; s < nspans; ++s) {
            const float* w;
            const int len = src.get(s, tmp, &w);
            const int64_t start = src.spans.start(s);
            for (int c = 0; c < nc; ++c) {
                const float* x = X + (int64_t)(c0 + c) * ldx + start;
                __m256 p0 = a0[c], p1 = a1[c];
                int j = 0;
                for (; j + 16 <= len; j += 16) {
                    p0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + j), _mm256_loadu_ps(x + j), p0);
                    p1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + j + 8), _mm256_loadu_ps(x + j + 8), p1);
                }
                if (j + 8 <= len) {
                    p0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + j), _mm256_loadu_ps(x + j), p0);
                    j += 8;
                }
                __m128 t = tail[c];
                for (; j < len; ++j) t = _mm_fmadd_ss(_mm_set_ss(w[j]), _mm_set_ss(x[j]), t);
                a0[c] = p0;
                a1[c] = p1;
                tail[c] = t;
            }
        }
        for (int c = 0; c < nc; ++c) out[c0 + c] = hsum_fixed(a0[c], a1[c], tail[c]);
    }
}

}  // namespace

namespace detail {

void dot_cols_avx2(uint32_t type, const uint8_t* row, const float* X, int64_t ldx, int ncols, float* out,
                   int64_t n) {
    const SpanSource src{type, row, RowSpans(type, n)};
    dot_cols_avx2_impl(src, X, ldx, ncols, out);
}

}  // namespace detail
}  // namespace ds4
