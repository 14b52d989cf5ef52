// AVX-512 matmul tiles (compiled with AVX-512 flags only; chosen at run time by
// quant_dot.cpp's matmul_rows when the CPU has AVX-512 and n % 16 == 0).
//
// Same bits as the AVX2 kernel: there, a column accumulates 16-element steps into
// two 8-lane registers a0 (elements 0..7 of each step) and a1 (8..15) and ends with
// hsum_fixed(a0, a1, 0). Here one 16-lane register holds a0 in its low half and a1
// in its high half, so every lane sees the same FMAs in the same order; the final
// sum splits it back and reduces exactly like hsum_fixed. With n % 16 == 0 there is
// no 8-step or scalar tail. The gain is the register file: a tile of up to 4 rows x
// 4 columns keeps 16 accumulators, so each weight and activation load feeds 4 FMAs.
// GCC 12's AVX-512 headers pass _mm512_undefined_* as the masked-off source of
// unmasked intrinsics and then warn about it (GCC bug 105593): a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quant/dequant_blocks.h"
#include "quant/quant_dot.h"
#include "quant/rocmfp_scale_table.h"

namespace ds4 {
namespace detail {
namespace {

using detail::rocmfp_scale;

inline float hsum16(__m512 v) {  // = hsum_fixed(low half, high half, 0) of the AVX2 kernel
    // Halves through memory: GCC 12's extract intrinsics trip -Wuninitialized.
    alignas(64) float h[16];
    _mm512_store_ps(h, v);
    const __m256 a = _mm256_add_ps(_mm256_load_ps(h), _mm256_load_ps(h + 8));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_setzero_ps()));
}

// A block's F16 scale through F16C (exact, like fp16_to_f32; a NaN scale gives
// the same quieted NaN products either way): the portable decoder's branches
// cost more than the block's arithmetic.
inline float block_scale(const uint8_t* b) { return _cvtsh_ss(rd_u16(b)); }

// R dequantised rows (w + r*n) against C columns of X; Y[c*ldy + r].
template <int R, int C>
void tile(const float* w, int64_t n, const float* X, int64_t ldx, float* Y, int64_t ldy) {
    __m512 acc[R][C];
    for (int r = 0; r < R; ++r) {
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    }
    for (int64_t j = 0; j < n; j += 16) {
        __m512 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = _mm512_load_ps(w + r * n + j);
        for (int c = 0; c < C; ++c) {
            const __m512 xv = _mm512_loadu_ps(X + c * ldx + j);
            for (int r = 0; r < R; ++r) acc[r][c] = _mm512_fmadd_ps(wv[r], xv, acc[r][c]);
        }
    }
    for (int c = 0; c < C; ++c) {
        for (int r = 0; r < R; ++r) Y[c * ldy + r] = hsum16(acc[r][c]);
    }
}

template <int R>
void row_tile(const float* w, int64_t n, const float* X, int64_t ldx, int ncols, float* Y, int64_t ldy) {
    int c0 = 0;
    for (; c0 + 4 <= ncols; c0 += 4) tile<R, 4>(w, n, X + c0 * ldx, ldx, Y + c0 * ldy, ldy);
    switch (ncols - c0) {
        case 3: tile<R, 3>(w, n, X + c0 * ldx, ldx, Y + c0 * ldy, ldy); break;
        case 2: tile<R, 2>(w, n, X + c0 * ldx, ldx, Y + c0 * ldy, ldy); break;
        case 1: tile<R, 1>(w, n, X + c0 * ldx, ldx, Y + c0 * ldy, ldy); break;
        default: break;
    }
}

// 16-lane decoders for the commonest types; each value is the same single
// rounding (float(q) * d, or the exact F16 widening) as the AVX2 decoders.
void deq_q8_0(const uint8_t* row, int64_t n, float* y) {
    for (int64_t i = 0; i < n / 32; ++i, row += 34, y += 32) {
        const __m512 d = _mm512_set1_ps(block_scale(row));
        const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2));
        const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 18));
        _mm512_store_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), d));
        _mm512_store_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), d));
    }
}

void deq_q4_0(const uint8_t* row, int64_t n, float* y) {
    const __m128i m4 = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    for (int64_t i = 0; i < n / 32; ++i, row += 18, y += 32) {
        const __m512 d = _mm512_set1_ps(block_scale(row));
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2));
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, m4), eight);  // elements 0..15
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), eight);  // 16..31
        _mm512_store_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d));
        _mm512_store_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d));
    }
}

void deq_f16(const uint8_t* row, int64_t n, float* y) {  // n % 16 == 0 here
    for (int64_t j = 0; j < n; j += 16) {
        _mm512_store_ps(y + j, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * j))));
    }
}

void dequant_row(uint32_t type, const uint8_t* row, int64_t n, float* y) {
    switch (type) {
        case 8: return deq_q8_0(row, n, y);
        case 2: return deq_q4_0(row, n, y);
        case 1: return deq_f16(row, n, y);
        default: return dequant_row_avx2(type, row, n, y);
    }
}

// Fused decoders for few columns (decode, small expert groups): the weights are
// decoded into registers and used at once instead of going through the row
// buffer. Each 16-lane weight vector is the same value the buffered decoder
// stores (float(q) * d, or the F16 widening), and acc[r][c] sees the same FMAs in
// the same order as in tile<R, C>, so the bits are those of the buffered path.
// Step s of a row is its elements 32s..32s+31. Types with 32-element blocks get
// step() from Step32; Q4_K decodes a 32-element sub-block of its 256-element block.
template <class D>
struct Step32 {
    static constexpr int64_t step_bytes() { return D::kBytes; }
    static void step(const uint8_t* row, int64_t s, __m512& w0, __m512& w1) { D::decode(row + s * D::kBytes, w0, w1); }
};

struct Q8_0Blocks : Step32<Q8_0Blocks> {
    static constexpr int64_t kBytes = 34;
    static void decode(const uint8_t* b, __m512& w0, __m512& w1) {
        const __m512 d = _mm512_set1_ps(block_scale(b));
        const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
        const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18));
        w0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), d);
        w1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), d);
    }
};

struct Q4_0Blocks : Step32<Q4_0Blocks> {
    static constexpr int64_t kBytes = 18;
    static void decode(const uint8_t* b, __m512& w0, __m512& w1) {
        const __m128i m4 = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
        const __m512 d = _mm512_set1_ps(block_scale(b));
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, m4), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), eight);
        w0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d);
        w1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d);
    }
};

// 16 signed bytes -> 16 floats times s (the AVX2 decoders' float(q) * s, one rounding).
inline __m512 i8x16_scaled(__m128i v, float s) {
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v)), _mm512_set1_ps(s));
}

// 16 nibble bytes through a 16-entry int8 table: low nibbles -> elements 0..15 (scale s0),
// high nibbles -> 16..31 (scale s1), as the AVX2 nibbles_lut.
inline void nibbles_lut(const uint8_t* qs, __m128i lut, float s0, float s1, __m512& w0, __m512& w1) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0F);
    w0 = i8x16_scaled(_mm_shuffle_epi8(lut, _mm_and_si128(q, m)), s0);
    w1 = i8x16_scaled(_mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(q, 4), m)), s1);
}

template <bool TwoScales>
struct Rocmfp4Blocks : Step32<Rocmfp4Blocks<TwoScales>> {  // 100 (two scales) and 101 (one scale)
    static constexpr int64_t kBytes = TwoScales ? 18 : 17;
    static void decode(const uint8_t* b, __m512& w0, __m512& w1) {
        const float s0 = rocmfp_scale(b[16]);
        const float s1 = TwoScales ? rocmfp_scale(b[17]) : s0;
        nibbles_lut(b, _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 10, 0, -1, -2, -3, -4, -6, -8, -10), s0, s1, w0, w1);
    }
};

struct Rocmfp2Blocks : Step32<Rocmfp2Blocks> {  // 107: four 2-bit codes per byte, element 4k+s at bits 2s of byte k
    static constexpr int64_t kBytes = 10;
    static void decode(const uint8_t* b, __m512& w0, __m512& w1) {
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b));
        const __m128i m3 = _mm_set1_epi8(3), one = _mm_set1_epi8(1);
        const __m128i c0 = _mm_and_si128(q, m3);
        const __m128i c1 = _mm_and_si128(_mm_srli_epi16(q, 2), m3);
        const __m128i c2 = _mm_and_si128(_mm_srli_epi16(q, 4), m3);
        const __m128i c3 = _mm_and_si128(_mm_srli_epi16(q, 6), m3);
        const __m128i t01 = _mm_unpacklo_epi8(c0, c1), t23 = _mm_unpacklo_epi8(c2, c3);
        w0 = i8x16_scaled(_mm_sub_epi8(_mm_unpacklo_epi16(t01, t23), one), rocmfp_scale(b[8]));
        w1 = i8x16_scaled(_mm_sub_epi8(_mm_unpackhi_epi16(t01, t23), one), rocmfp_scale(b[9]));
    }
};

struct Rocmfp8Blocks : Step32<Rocmfp8Blocks> {  // 103
    static constexpr int64_t kBytes = 33;
    static void decode(const uint8_t* b, __m512& w0, __m512& w1) {
        const float s = rocmfp_scale(b[32]);
        w0 = i8x16_scaled(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), s);
        w1 = i8x16_scaled(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16)), s);
    }
};

struct Mxfp4Blocks : Step32<Mxfp4Blocks> {  // 39
    static constexpr int64_t kBytes = 17;
    static void decode(const uint8_t* b, __m512& w0, __m512& w1) {
        const float d = e8m0_to_f32_half(b[0]);
        nibbles_lut(b + 1, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)), d, d, w0, w1);
    }
};

struct F16Blocks : Step32<F16Blocks> {  // 32 values per "block" (n % 32 == 0 is checked by the caller)
    static constexpr int64_t kBytes = 64;
    static void decode(const uint8_t* b, __m512& w0, __m512& w1) {
        w0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
        w1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32)));
    }
};

constexpr int64_t kPrefetchBytes = 1024;  // ahead in each weight row stream (hides DRAM latency)

template <class B, int R, int C>
void fused_tile(const uint8_t* W, int64_t stride, int64_t n, const float* X, int64_t ldx, float* Y, int64_t ldy) {
    __m512 acc[R][C];
    for (int r = 0; r < R; ++r) {
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    }
    // Rows of a few KB are too short a stream for the hardware prefetcher to learn,
    // so fetch the same place of the next tile's rows (R rows further: with
    // contiguous rows, the tile after this one); long rows are fetched
    // kPrefetchBytes ahead in the row. Measured on Zen 4 (one thread, 64 MB
    // Q8_0/Q4_0, n = 512..4096): 8-16 GB/s against 6-11 for the row buffer.
    const int64_t pf = R * stride <= 32768 ? R * stride : kPrefetchBytes;
    for (int64_t blk = 0; blk < n / 32; ++blk) {
        __m512 x0[C], x1[C];
        for (int c = 0; c < C; ++c) {
            x0[c] = _mm512_loadu_ps(X + c * ldx + blk * 32);
            x1[c] = _mm512_loadu_ps(X + c * ldx + blk * 32 + 16);
        }
        // Row by row, so a row's two decoded vectors live in registers only.
        for (int r = 0; r < R; ++r) {
            __m512 w0, w1;
            const uint8_t* row = W + r * stride;
            _mm_prefetch(reinterpret_cast<const char*>(row + blk * B::step_bytes() + pf), _MM_HINT_T0);
            B::step(row, blk, w0, w1);
            for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(w1, x1[c], _mm512_fmadd_ps(w0, x0[c], acc[r][c]));
        }
    }
    for (int c = 0; c < C; ++c) {
        for (int r = 0; r < R; ++r) Y[c * ldy + r] = hsum16(acc[r][c]);
    }
}

template <class B, int C>
void fused_rows(const uint8_t* W, int64_t stride, int64_t n_rows, int64_t n, const float* X, int64_t ldx, float* Y,
                int64_t ldy) {
    // One or two columns: 8 rows at once (8 weight streams in flight, 8-16 accumulators).
    constexpr int kR = C <= 2 ? 8 : 4;
    int64_t r0 = 0;
    for (; r0 + kR <= n_rows; r0 += kR) fused_tile<B, kR, C>(W + r0 * stride, stride, n, X, ldx, Y + r0, ldy);
    for (; r0 + 4 <= n_rows; r0 += 4) fused_tile<B, 4, C>(W + r0 * stride, stride, n, X, ldx, Y + r0, ldy);
    for (; r0 < n_rows; ++r0) fused_tile<B, 1, C>(W + r0 * stride, stride, n, X, ldx, Y + r0, ldy);
}

template <class B>
void fused_matmul(const uint8_t* W, int64_t stride, int64_t n_rows, int64_t n, const float* X, int64_t ldx, int ncols,
                  float* Y, int64_t ldy) {
    switch (ncols) {
        case 1: return fused_rows<B, 1>(W, stride, n_rows, n, X, ldx, Y, ldy);
        case 2: return fused_rows<B, 2>(W, stride, n_rows, n, X, ldx, Y, ldy);
        case 3: return fused_rows<B, 3>(W, stride, n_rows, n, X, ldx, Y, ldy);
        default: return fused_rows<B, 4>(W, stride, n_rows, n, X, ldx, Y, ldy);
    }
}

struct Q4KBlocks {  // 12: 256-element blocks of 144 bytes, eight 32-element sub-blocks
    static constexpr int64_t step_bytes() { return 18; }  // 144 / 8, for the prefetch distance
    static void step(const uint8_t* row, int64_t s, __m512& w0, __m512& w1) {
        const uint8_t* b = row + (s / 8) * 144;
        const int k = (int)(s % 8);
        int sc, mn;
        q4_k_scale_min(b + 4, k, &sc, &mn);
        // The AVX2 decoder's values: fmsub(d * sc, q, dmin * mn), one rounding each.
        const __m512 dl = _mm512_set1_ps(block_scale(b) * (float)sc);
        const __m512 ml = _mm512_set1_ps(block_scale(b + 2) * (float)mn);
        const uint8_t* q = b + 16 + (k / 2) * 32;
        const __m128i m4 = _mm_set1_epi8(0x0F);
        __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
        __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16));
        v0 = _mm_and_si128(k & 1 ? _mm_srli_epi16(v0, 4) : v0, m4);
        v1 = _mm_and_si128(k & 1 ? _mm_srli_epi16(v1, 4) : v1, m4);
        w0 = _mm512_fmsub_ps(dl, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v0)), ml);
        w1 = _mm512_fmsub_ps(dl, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v1)), ml);
    }
};

struct Q2KBlocks {  // 10: 256-element blocks of 84 bytes, sixteen 16-element sub-blocks
    static constexpr int64_t step_bytes() { return 10; }  // about 84 / 8, for the prefetch distance
    // Sub-block s as the AVX2 decoder: fmsub(d * sc_s, q, dmin * m_s).
    static __m512 sub_block(const uint8_t* b, int s, float d, float dmin) {
        const int e = s * 16;
        const __m512 dl = _mm512_set1_ps(d * (float)(b[s] & 0xF));
        const __m512 ml = _mm512_set1_ps(dmin * (float)(b[s] >> 4));
        __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 + (e / 128) * 32 + e % 32));
        v = _mm_and_si128(_mm_srl_epi16(v, _mm_cvtsi32_si128(2 * ((e % 128) / 32))), _mm_set1_epi8(3));
        return _mm512_fmsub_ps(dl, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v)), ml);
    }
    static void step(const uint8_t* row, int64_t s, __m512& w0, __m512& w1) {
        const uint8_t* b = row + (s / 8) * 84;
        const int s0 = (int)(s % 8) * 2;
        const float d = block_scale(b + 80), dmin = block_scale(b + 82);
        w0 = sub_block(b, s0, d, dmin);
        w1 = sub_block(b, s0 + 1, d, dmin);
    }
};

// Types with a fused decoder (each decodes exactly as its AVX2 decoder in
// quant_dot_avx2.cpp; IQ2_XXS and the 3/6-bit ROCmFP types keep the row buffer);
// true when it ran.
bool try_fused(uint32_t type, const uint8_t* W, int64_t stride, int64_t n_rows, int64_t n, const float* X,
               int64_t ldx, int ncols, float* Y, int64_t ldy) {
    if (ncols < 1 || ncols > 4 || n % 32 != 0) return false;
    switch (type) {
        case 8: fused_matmul<Q8_0Blocks>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        case 2: fused_matmul<Q4_0Blocks>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        case 1: fused_matmul<F16Blocks>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        case 10: fused_matmul<Q2KBlocks>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        case 12: fused_matmul<Q4KBlocks>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        case 39: fused_matmul<Mxfp4Blocks>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        case 100: fused_matmul<Rocmfp4Blocks<true>>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        case 101: fused_matmul<Rocmfp4Blocks<false>>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        case 103: fused_matmul<Rocmfp8Blocks>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        case 107: fused_matmul<Rocmfp2Blocks>(W, stride, n_rows, n, X, ldx, ncols, Y, ldy); return true;
        default: return false;
    }
}

// R rows of n floats, 64-byte aligned, per thread; grows, then stays.
float* rows_buffer(int64_t floats) {
    thread_local std::vector<float> buf;
    if ((int64_t)buf.size() < floats + 16) buf.resize((size_t)(floats + 16));
    const uintptr_t p = reinterpret_cast<uintptr_t>(buf.data());
    return reinterpret_cast<float*>((p + 63) & ~uintptr_t(63));
}

}  // namespace

void matmul_avx512(uint32_t type, const uint8_t* W, int64_t row_stride_bytes, int64_t n_rows, const float* X,
                   int64_t ldx, int ncols, float* Y, int64_t ldy, int64_t n) {
    if (try_fused(type, W, row_stride_bytes, n_rows, n, X, ldx, ncols, Y, ldy)) return;
    constexpr int kRows = 4;
    float* w = rows_buffer(kRows * n);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kRows) {
        const int nr = (int)std::min<int64_t>(kRows, n_rows - r0);
        for (int r = 0; r < nr; ++r) dequant_row(type, W + (r0 + r) * row_stride_bytes, n, w + r * n);
        switch (nr) {
            case 4: row_tile<4>(w, n, X, ldx, ncols, Y + r0, ldy); break;
            case 3: row_tile<3>(w, n, X, ldx, ncols, Y + r0, ldy); break;
            case 2: row_tile<2>(w, n, X, ldx, ncols, Y + r0, ldy); break;
            default: row_tile<1>(w, n, X, ldx, ncols, Y + r0, ldy); break;
        }
    }
}

}  // namespace detail
}  // namespace ds4
