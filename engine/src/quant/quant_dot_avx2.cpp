// AVX2 + FMA + F16C dot kernels (compiled with those flags only; chosen at run
// time by quant_dot.cpp).
//
// Each span (one block, or 64 elements of a float type) is dequantised once
// into an aligned buffer with SIMD decoders, then FMA'd against every requested
// column. Per column the sequence of operations is fixed: two 8-lane
// accumulators fed 16 elements at a time, an 8-element step into the first if
// 8 remain, single-element FMAs into a scalar for the last < 8, and one fixed
// horizontal sum. Nothing depends on ncols or on which other columns share the
// call, so dot_row_cols is bitwise equal to dot_row per column.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "quant/dequant_blocks.h"
#include "quant/quant_dot.h"
#include "quant/quant_span.h"
#include "quant/rocmfp_scale_table.h"

namespace ds4 {
namespace {

using detail::rocmfp_scale;

inline float hsum_fixed(__m256 a0, __m256 a1, __m128 tail) {
    const __m256 v = _mm256_add_ps(a0, a1);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(_mm_add_ss(s, tail));
}

// Low 8 signed / unsigned bytes -> 8 floats.
inline __m256 i8x8_ps(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }
inline __m256 u8x8_ps(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }

// 16 signed bytes -> 16 floats times scale, stored at y.
inline void i8x16_scaled(__m128i v, __m256 s, float* y) {
    _mm256_store_ps(y, _mm256_mul_ps(i8x8_ps(v), s));
    _mm256_store_ps(y + 8, _mm256_mul_ps(i8x8_ps(_mm_srli_si128(v, 8)), s));
}

// 16 nibble bytes through a 16-entry int8 table: low nibbles -> y[0..15] * s0,
// high nibbles -> y[16..31] * s1.
inline void nibbles_lut(const uint8_t* qs, __m128i lut, float s0, float s1, float* y) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0F);
    i8x16_scaled(_mm_shuffle_epi8(lut, _mm_and_si128(q, m)), _mm256_set1_ps(s0), y);
    i8x16_scaled(_mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(q, 4), m)), _mm256_set1_ps(s1), y + 16);
}



// Block decoders: static constexpr kBlock elements, kBytes bytes; run(b, y).
struct DeqQ8_0 {
    static constexpr int kBlock = 32, kBytes = 34;
    static void run(const uint8_t* b, float* y) {
        const __m256 d = _mm256_set1_ps(fp16_to_f32(rd_u16(b)));
        for (int j = 0; j < 32; j += 16) i8x16_scaled(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 + j)), d, y + j);
    }
};

struct DeqQ4_0 {
    static constexpr int kBlock = 32, kBytes = 18;
    static void run(const uint8_t* b, float* y) {
        const float d = fp16_to_f32(rd_u16(b));
        nibbles_lut(b + 2, _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7), d, d, y);
    }
};

struct DeqMxfp4 {
    static constexpr int kBlock = 32, kBytes = 17;
    static void run(const uint8_t* b, float* y) {
        const float d = e8m0_to_f32_half(b[0]);
        nibbles_lut(b + 1, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)), d, d, y);
    }
};

template <bool TwoScales>
struct DeqRocmfp4 {  // 100 (two scales) and 101 (one scale)
    static constexpr int kBlock = 32, kBytes = TwoScales ? 18 : 17;
    static void run(const uint8_t* b, float* y) {
        const float s0 = rocmfp_scale(b[16]);
        const float s1 = TwoScales ? rocmfp_scale(b[17]) : s0;
        nibbles_lut(b, _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 10, 0, -1, -2, -3, -4, -6, -8, -10), s0, s1, y);
    }
};

struct DeqRocmfp8 {  // 103
    static constexpr int kBlock = 32, kBytes = 33;
    static void run(const uint8_t* b, float* y) {
        const __m256 s = _mm256_set1_ps(rocmfp_scale(b[32]));
        for (int j = 0; j < 32; j += 16) i8x16_scaled(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + j)), s, y + j);
    }
};

struct DeqRocmfp2 {  // 107: four 2-bit codes per byte, element 4k+s at bits 2s of byte k
    static constexpr int kBlock = 32, kBytes = 10;
    static void run(const uint8_t* b, float* y) {
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b));
        const __m128i m3 = _mm_set1_epi8(3);
        const __m128i c0 = _mm_and_si128(q, m3);
        const __m128i c1 = _mm_and_si128(_mm_srli_epi16(q, 2), m3);
        const __m128i c2 = _mm_and_si128(_mm_srli_epi16(q, 4), m3);
        const __m128i c3 = _mm_and_si128(_mm_srli_epi16(q, 6), m3);
        const __m128i t01 = _mm_unpacklo_epi8(c0, c1), t23 = _mm_unpacklo_epi8(c2, c3);
        const __m128i one = _mm_set1_epi8(1);
        i8x16_scaled(_mm_sub_epi8(_mm_unpacklo_epi16(t01, t23), one), _mm256_set1_ps(rocmfp_scale(b[8])), y);
        i8x16_scaled(_mm_sub_epi8(_mm_unpackhi_epi16(t01, t23), one), _mm256_set1_ps(rocmfp_scale(b[9])), y + 16);
    }
};

// pshufb controls that put, in each 32-bit lane, the 24-bit little-endian group
// starting at byte `lo` (lanes 0..3) or `hi` (lanes 4..7) of a 16-byte source.
struct Ctl32 {
    alignas(32) int8_t b[32];
};
constexpr Ctl32 groups24_ctl(int lo, int hi) {
    Ctl32 c{};
    for (int lane = 0; lane < 8; ++lane) {
        const int off = lane < 4 ? lo : hi;
        c.b[4 * lane + 0] = (int8_t)off;
        c.b[4 * lane + 1] = (int8_t)(off + 1);
        c.b[4 * lane + 2] = (int8_t)(off + 2);
        c.b[4 * lane + 3] = (int8_t)0x80;  // zero the top byte
    }
    return c;
}
// Q3: group g (bytes 3g..3g+2) in all lanes. Q6: elements 8h..8h+7 are groups 2h
// and 2h+1, read from bytes 0..15 (h < 2) or 8..23 (h >= 2) of the code bytes.
constexpr Ctl32 kQ3Ctl[4] = {groups24_ctl(0, 0), groups24_ctl(3, 3), groups24_ctl(6, 6), groups24_ctl(9, 9)};
constexpr Ctl32 kQ6Ctl[4] = {groups24_ctl(0, 3), groups24_ctl(6, 9), groups24_ctl(4, 7), groups24_ctl(10, 13)};

inline __m256i groups24(__m128i src, const Ctl32& ctl) {
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(src), _mm256_load_si256(reinterpret_cast<const __m256i*>(ctl.b)));
}

struct DeqRocmfp3 {  // 104: eight 3-bit codes per 3 bytes, then a sign/magnitude table
    static constexpr int kBlock = 32, kBytes = 14;
    static void run(const uint8_t* b, float* y) {
        // The 12 code bytes as 8 + 4 (a 16-byte load could run past the row's last block).
        uint32_t tail4;
        std::memcpy(&tail4, b + 8, 4);
        const __m128i src = _mm_insert_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)), (int)tail4, 2);
        const __m256i shifts = _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21);
        const __m256i lut = _mm256_setr_epi32(0, 1, 2, 4, 0, -1, -2, -4);
        for (int g = 0; g < 4; ++g) {  // group g: elements 8g..8g+7
            const __m256i code = _mm256_and_si256(_mm256_srlv_epi32(groups24(src, kQ3Ctl[g]), shifts), _mm256_set1_epi32(7));
            const __m256 v = _mm256_cvtepi32_ps(_mm256_permutevar8x32_epi32(lut, code));
            _mm256_store_ps(y + 8 * g, _mm256_mul_ps(v, _mm256_set1_ps(rocmfp_scale(b[12 + g / 2]))));
        }
    }
};

struct DeqRocmfp6 {  // 102: four 6-bit codes per 3 bytes, bit 5 sign
    static constexpr int kBlock = 32, kBytes = 26;
    static void run(const uint8_t* b, float* y) {
        // Code bytes 0..15 and 8..23 (both inside the 26-byte block).
        const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
        const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 8));
        const __m256i shifts = _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18);
        for (int h = 0; h < 4; ++h) {  // elements 8h..8h+7 = groups 2h (lanes 0-3) and 2h+1 (lanes 4-7)
            const __m128i src = h < 2 ? lo : hi;
            const __m256i code = _mm256_and_si256(_mm256_srlv_epi32(groups24(src, kQ6Ctl[h]), shifts), _mm256_set1_epi32(63));
            const __m256i mag = _mm256_and_si256(code, _mm256_set1_epi32(31));
            const __m256i neg = _mm256_cmpeq_epi32(_mm256_and_si256(code, _mm256_set1_epi32(32)), _mm256_set1_epi32(32));
            const __m256i val = _mm256_sub_epi32(_mm256_xor_si256(mag, neg), neg);  // neg ? -mag : mag
            _mm256_store_ps(y + 8 * h, _mm256_mul_ps(_mm256_cvtepi32_ps(val), _mm256_set1_ps(rocmfp_scale(b[24 + h / 2]))));
        }
    }
};

struct DeqQ4_K {
    static constexpr int kBlock = 256, kBytes = 144;
    static void run(const uint8_t* b, float* y) {
        const float d = fp16_to_f32(rd_u16(b));
        const float dmin = fp16_to_f32(rd_u16(b + 2));
        const __m128i m4 = _mm_set1_epi8(0x0F);
        for (int k = 0; k < 8; ++k) {
            int sc, mn;
            q4_k_scale_min(b + 4, k, &sc, &mn);
            const __m256 dl = _mm256_set1_ps(d * (float)sc), ml = _mm256_set1_ps(dmin * (float)mn);
            const uint8_t* q = b + 16 + (k / 2) * 32;
            for (int h = 0; h < 2; ++h) {
                __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * h));
                v = _mm_and_si128(k & 1 ? _mm_srli_epi16(v, 4) : v, m4);
                float* o = y + k * 32 + 16 * h;
                _mm256_store_ps(o, _mm256_fmsub_ps(dl, u8x8_ps(v), ml));
                _mm256_store_ps(o + 8, _mm256_fmsub_ps(dl, u8x8_ps(_mm_srli_si128(v, 8)), ml));
            }
        }
    }
};

struct DeqQ2_K {
    static constexpr int kBlock = 256, kBytes = 84;
    static void run(const uint8_t* b, float* y) {
        const float d = fp16_to_f32(rd_u16(b + 80));
        const float dmin = fp16_to_f32(rd_u16(b + 82));
        const __m128i m3 = _mm_set1_epi8(3);
        for (int s = 0; s < 16; ++s) {  // sub-block s: 16 elements
            const int e = s * 16;
            const __m256 dl = _mm256_set1_ps(d * (float)(b[s] & 0xF));
            const __m256 ml = _mm256_set1_ps(dmin * (float)(b[s] >> 4));
            __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 + (e / 128) * 32 + e % 32));
            v = _mm_and_si128(_mm_srl_epi16(v, _mm_cvtsi32_si128(2 * ((e % 128) / 32))), m3);
            _mm256_store_ps(y + e, _mm256_fmsub_ps(dl, u8x8_ps(v), ml));
            _mm256_store_ps(y + e + 8, _mm256_fmsub_ps(dl, u8x8_ps(_mm_srli_si128(v, 8)), ml));
        }
    }
};

struct DeqIq2Xxs {
    static constexpr int kBlock = 256, kBytes = 66;
    static void run(const uint8_t* b, float* y) {
        const float d = fp16_to_f32(rd_u16(b));
        const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        const __m256i sign_bit = _mm256_set1_epi32((int)0x80000000u);
        for (int g = 0; g < 8; ++g) {
            uint32_t aux[2];
            std::memcpy(aux, b + 2 + 8 * g, 8);
            const __m256 db = _mm256_set1_ps(d * (0.5f + (float)(aux[1] >> 28)) * 0.25f);
            for (int l = 0; l < 4; ++l) {
                const __m128i row = _mm_cvtsi64_si128((long long)kIq2xxsGrid[(aux[0] >> (8 * l)) & 0xFF]);
                const __m256i sb = _mm256_set1_epi32(iq2_sign_byte((aux[1] >> (7 * l)) & 127));
                const __m256i neg = _mm256_cmpeq_epi32(_mm256_and_si256(sb, bit), bit);
                const __m256 v = _mm256_mul_ps(db, u8x8_ps(row));
                _mm256_store_ps(y + g * 32 + l * 8,
                                _mm256_xor_ps(v, _mm256_castsi256_ps(_mm256_and_si256(neg, sign_bit))));
            }
        }
    }
};

// Float rows: spans of kFloatSpan elements (shorter at the end).
struct SrcF16 {
    static constexpr int kElemBytes = 2;
    static int run(const uint8_t* b, int len, float* y, const float** w) {
        int j = 0;
        for (; j + 8 <= len; j += 8) _mm256_store_ps(y + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * j))));
        for (; j < len; ++j) y[j] = fp16_to_f32(rd_u16(b + 2 * j));
        *w = y;
        return len;
    }
};

struct SrcBf16 {
    static constexpr int kElemBytes = 2;
    static int run(const uint8_t* b, int len, float* y, const float** w) {
        int j = 0;
        for (; j + 8 <= len; j += 8) {
            const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * j)));
            _mm256_store_ps(y + j, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
        }
        for (; j < len; ++j) y[j] = bf16_to_f32(rd_u16(b + 2 * j));
        *w = y;
        return len;
    }
};

struct SrcF32 {  // no conversion: FMA straight from the row when it is float-aligned
    static constexpr int kElemBytes = 4;
    static int run(const uint8_t* b, int len, float* y, const float** w) {
        if (reinterpret_cast<uintptr_t>(b) % alignof(float) == 0) {
            *w = reinterpret_cast<const float*>(b);
        } else {
            std::memcpy(y, b, (size_t)len * 4);  // e.g. a row sliced at an odd byte offset
            *w = y;
        }
        return len;
    }
};

// Column accumulators: the fixed per-column reduction described at the top.
struct ColAcc {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m128 tail = _mm_setzero_ps();

    inline void add(const float* w, const float* x, int len) {
        __m256 p0 = a0, p1 = a1;
        int j = 0;
        for (; j + 16 <= len; j += 16) {
            p0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + j), _mm256_loadu_ps(x + j), p0);
            p1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + j + 8), _mm256_loadu_ps(x + j + 8), p1);
        }
        if (j + 8 <= len) {
            p0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + j), _mm256_loadu_ps(x + j), p0);
            j += 8;
        }
        __m128 t = tail;
        for (; j < len; ++j) t = _mm_fmadd_ss(_mm_set_ss(w[j]), _mm_set_ss(x[j]), t);
        a0 = p0;
        a1 = p1;
        tail = t;
    }
    float sum() const { return hsum_fixed(a0, a1, tail); }
};

constexpr int kColGroup = 4;

// NC columns against one already-dequantised row w of n floats: exactly the
// operations ColAcc{}.add(w, x_c, n) performs per column (16-element steps into
// a0/a1, an 8-step, scalar tail), so the bits equal the span-by-span walk: every
// span but the last is a multiple of 16 long. Each weight vector is loaded once
// for all NC columns.
template <int NC>
void fma_cols(const float* w, const float* X, int64_t ldx, int64_t n, float* out) {
    __m256 p0[NC], p1[NC];
    __m128 t[NC];
    for (int c = 0; c < NC; ++c) {
        p0[c] = _mm256_setzero_ps();
        p1[c] = _mm256_setzero_ps();
        t[c] = _mm_setzero_ps();
    }
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const __m256 w0 = _mm256_load_ps(w + j), w1 = _mm256_load_ps(w + j + 8);
        for (int c = 0; c < NC; ++c) {
            p0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(X + c * ldx + j), p0[c]);
            p1[c] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(X + c * ldx + j + 8), p1[c]);
        }
    }
    if (j + 8 <= n) {
        const __m256 w0 = _mm256_load_ps(w + j);
        for (int c = 0; c < NC; ++c) p0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(X + c * ldx + j), p0[c]);
        j += 8;
    }
    for (; j < n; ++j) {
        for (int c = 0; c < NC; ++c) t[c] = _mm_fmadd_ss(_mm_set_ss(w[j]), _mm_set_ss(X[c * ldx + j]), t[c]);
    }
    for (int c = 0; c < NC; ++c) out[c] = hsum_fixed(p0[c], p1[c], t[c]);
}

// All columns against a dequantised row, in groups of kColGroup.
void fma_all_cols(const float* w, const float* X, int64_t ldx, int ncols, int64_t n, float* out) {
    int c0 = 0;
    for (; c0 + kColGroup <= ncols; c0 += kColGroup) fma_cols<kColGroup>(w, X + c0 * ldx, ldx, n, out + c0);
    switch (ncols - c0) {
        case 3: fma_cols<3>(w, X + c0 * ldx, ldx, n, out + c0); break;
        case 2: fma_cols<2>(w, X + c0 * ldx, ldx, n, out + c0); break;
        case 1: fma_cols<1>(w, X + c0 * ldx, ldx, n, out + c0); break;
        default: break;
    }
}

// A whole dequantised row, per thread; grows to the longest row, then stays.
float* row_buffer(int64_t n) {
    thread_local std::vector<float> buf;
    if ((int64_t)buf.size() < n + 8) buf.resize((size_t)(n + 8));
    // Aligned to 32 bytes for the dequantisers' aligned stores.
    const uintptr_t p = reinterpret_cast<uintptr_t>(buf.data());
    return reinterpret_cast<float*>((p + 31) & ~uintptr_t(31));
}

template <class Deq>
void dot_blocks(const uint8_t* row, int64_t n, const float* X, int64_t ldx, int ncols, float* out) {
    const int64_t nb = n / Deq::kBlock;
    if (ncols > kColGroup) {
        // Many columns: decode the row once, not once per column group.
        float* w = row_buffer(n);
        for (int64_t i = 0; i < nb; ++i) Deq::run(row + i * Deq::kBytes, w + i * Deq::kBlock);
        return fma_all_cols(w, X, ldx, ncols, n, out);
    }
    alignas(32) float tmp[Deq::kBlock];
    ColAcc acc[kColGroup];
    const uint8_t* b = row;
    for (int64_t i = 0; i < nb; ++i, b += Deq::kBytes) {
        Deq::run(b, tmp);
        for (int c = 0; c < ncols; ++c) acc[c].add(tmp, X + (int64_t)c * ldx + i * Deq::kBlock, Deq::kBlock);
    }
    for (int c = 0; c < ncols; ++c) out[c] = acc[c].sum();
}

template <class Src>
void dot_floats(const uint8_t* row, int64_t n, const float* X, int64_t ldx, int ncols, float* out) {
    alignas(32) float tmp[kFloatSpan];
    if (ncols > kColGroup) {
        float* w = row_buffer(n);
        for (int64_t start = 0; start < n; start += kFloatSpan) {
            const int len = (int)std::min<int64_t>(kFloatSpan, n - start);
            const float* src;
            Src::run(row + start * Src::kElemBytes, len, tmp, &src);
            std::memcpy(w + start, src, (size_t)len * 4);
        }
        return fma_all_cols(w, X, ldx, ncols, n, out);
    }
    ColAcc acc[kColGroup];
    for (int64_t start = 0; start < n; start += kFloatSpan) {
        const int len = (int)std::min<int64_t>(kFloatSpan, n - start);
        const float* w;
        Src::run(row + start * Src::kElemBytes, len, tmp, &w);
        for (int c = 0; c < ncols; ++c) acc[c].add(w, X + (int64_t)c * ldx + start, len);
    }
    for (int c = 0; c < ncols; ++c) out[c] = acc[c].sum();
}

}  // namespace

namespace detail {

void dequant_row_avx2(uint32_t type, const uint8_t* row, int64_t n, float* y) {
    auto blocks = [&](auto deq) {
        using Deq = decltype(deq);
        for (int64_t i = 0; i < n / Deq::kBlock; ++i) Deq::run(row + i * Deq::kBytes, y + i * Deq::kBlock);
    };
    auto floats = [&](auto src) {
        using Src = decltype(src);
        alignas(32) float tmp[kFloatSpan];
        for (int64_t start = 0; start < n; start += kFloatSpan) {
            const int len = (int)std::min<int64_t>(kFloatSpan, n - start);
            const float* w;
            Src::run(row + start * Src::kElemBytes, len, tmp, &w);
            std::memcpy(y + start, w, (size_t)len * 4);
        }
    };
    switch (type) {
        case 0: return floats(SrcF32{});
        case 1: return floats(SrcF16{});
        case 30: return floats(SrcBf16{});
        case 8: return blocks(DeqQ8_0{});
        case 2: return blocks(DeqQ4_0{});
        case 12: return blocks(DeqQ4_K{});
        case 10: return blocks(DeqQ2_K{});
        case 16: return blocks(DeqIq2Xxs{});
        case 39: return blocks(DeqMxfp4{});
        case 100: return blocks(DeqRocmfp4<true>{});
        case 101: return blocks(DeqRocmfp4<false>{});
        case 102: return blocks(DeqRocmfp6{});
        case 103: return blocks(DeqRocmfp8{});
        case 104: return blocks(DeqRocmfp3{});
        case 107: return blocks(DeqRocmfp2{});
        default: return dequantize_row(type, row, y, n);  // unreachable: types are checked
    }
}

void dot_cols_avx2(uint32_t type, const uint8_t* row, const float* X, int64_t ldx, int ncols, float* out,
                   int64_t n) {
    switch (type) {
        case 0: return dot_floats<SrcF32>(row, n, X, ldx, ncols, out);
        case 1: return dot_floats<SrcF16>(row, n, X, ldx, ncols, out);
        case 30: return dot_floats<SrcBf16>(row, n, X, ldx, ncols, out);
        case 8: return dot_blocks<DeqQ8_0>(row, n, X, ldx, ncols, out);
        case 2: return dot_blocks<DeqQ4_0>(row, n, X, ldx, ncols, out);
        case 12: return dot_blocks<DeqQ4_K>(row, n, X, ldx, ncols, out);
        case 10: return dot_blocks<DeqQ2_K>(row, n, X, ldx, ncols, out);
        case 16: return dot_blocks<DeqIq2Xxs>(row, n, X, ldx, ncols, out);
        case 39: return dot_blocks<DeqMxfp4>(row, n, X, ldx, ncols, out);
        case 100: return dot_blocks<DeqRocmfp4<true>>(row, n, X, ldx, ncols, out);
        case 101: return dot_blocks<DeqRocmfp4<false>>(row, n, X, ldx, ncols, out);
        case 102: return dot_blocks<DeqRocmfp6>(row, n, X, ldx, ncols, out);
        case 103: return dot_blocks<DeqRocmfp8>(row, n, X, ldx, ncols, out);
        case 104: return dot_blocks<DeqRocmfp3>(row, n, X, ldx, ncols, out);
        case 107: return dot_blocks<DeqRocmfp2>(row, n, X, ldx, ncols, out);
        default: return dot_cols_scalar(type, row, X, ldx, ncols, out, n);  // unreachable: types are checked
    }
}

}  // namespace detail
}  // namespace ds4
