// Scalar block dequantisers for every type the engine computes with.
//
// Each function turns one block into float32 with the same float32 operations,
// in the same order, as gguf-py's dequantize_blocks (so the scalar build is
// bitwise equal to gguf.quants.dequantize); ROCmFP types follow rocmfp_codes.h.
//
// Everything here has internal linkage on purpose: the header is compiled both
// into the portable scalar TU and into *_avx2.cpp (with -mavx2 -mfma). Shared
// inline functions with external linkage would let the linker keep the AVX2
// copy for the scalar path (illegal instruction on an old CPU, and FMA
// contraction breaking the bitwise match).
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant/iq2xxs_grid.h"
#include "quant/rocmfp_codes.h"

namespace ds4 {
namespace {

// fmaf(a, b, c) with one rounding, from double arithmetic (no FMA instruction or
// libm call needed): a*b is exact in double (48 significant bits, no underflow), so
// s = a*b + c has a single rounding, and rounding s to float rounds the exact sum
// unless s sits half-way between two floats (the 29 bits float drops read
// 1000...0) or in the float subnormal range. Those cases (common with few-bit
// operands, but then usually exact) round s to odd first: if s was inexact and its
// last bit is even, one ulp toward the exact sum, whose side TwoSum gives. A sum
// rounded to odd with 53 >= 24 + 2 bits rounds to float exactly as the exact sum
// does (Boldo & Melquiond 2008). inf/nan give (float)s, as an FMA does.
inline float fma_f32(float a, float b, float c) {
#if FLT_EVAL_METHOD == 0  // no x87 excess precision
    const double p = (double)a * (double)b, z = c;
    double s = p + z;
    uint64_t u;
    std::memcpy(&u, &s, 8);
    const uint64_t mag = u & 0x7FFFFFFFFFFFFFFFull;
    const bool normal = mag >= 0x3810000000000000ull && mag < 0x7FF0000000000000ull;  // 2^-126 <= |s| < inf
    if ((u & 0x1FFFFFFFu) != 0x10000000u && (normal || mag == 0)) return (float)s;
    const double zz = s - p;
    const double err = (p - (s - zz)) + (z - zz);  // p + z - s exactly (Knuth's TwoSum); nan for inf/nan
    if ((err > 0 || err < 0) && (u & 1) == 0) {
        u += ((err > 0) == (s > 0)) ? 1 : ~uint64_t(0);  // one ulp up or down in magnitude
        std::memcpy(&s, &u, 8);
    }
    return (float)s;
#else
    return std::fma(a, b, c);
#endif
}

inline uint16_t rd_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

inline float f32_from_bits(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

// IEEE half -> float, exact for every input: subnormals are normalised, inf and
// nan keep sign and payload (numpy does the same, signalling nans included).
inline float fp16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    if (exp == 0x1F) return f32_from_bits(sign | 0x7F800000u | (mant << 13));
    if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return f32_from_bits(sign);
    uint32_t e = 113;  // exponent of 2^-14 (the subnormal scale) before normalising
    while (!(mant & 0x400u)) {
        mant <<= 1;
        --e;
    }
    return f32_from_bits(sign | (e << 23) | ((mant & 0x3FFu) << 13));
}

// bfloat16 is the top half of a float32.
inline float bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

// MXFP4 shared exponent as 2^(x-127) / 2 (the kvalues below are doubled e2m1).
inline float e8m0_to_f32_half(uint8_t x) {
    return f32_from_bits(x < 2 ? (0x00200000u << x) : ((uint32_t)(x - 1) << 23));
}

const int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// --- 32-element blocks ------------------------------------------------------

// Q8_0: { f16 d; int8 qs[32] }.
inline void deq_q8_0(const uint8_t* b, float* y) {
    const float d = fp16_to_f32(rd_u16(b));
    for (int j = 0; j < 32; ++j) y[j] = (float)(int8_t)b[2 + j] * d;
}

// Q4_0: { f16 d; u8 qs[16] }, element j<16 = low nibble of qs[j], j>=16 = high nibble.
inline void deq_q4_0(const uint8_t* b, float* y) {
    const float d = fp16_to_f32(rd_u16(b));
    for (int j = 0; j < 16; ++j) {
        y[j] = d * (float)((int)(b[2 + j] & 0x0F) - 8);
        y[j + 16] = d * (float)((int)(b[2 + j] >> 4) - 8);
    }
}

// MXFP4: { u8 e (E8M0); u8 qs[16] }, same nibble order as Q4_0.
inline void deq_mxfp4(const uint8_t* b, float* y) {
    const float d = e8m0_to_f32_half(b[0]);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * (float)kMxfp4Values[b[1 + j] & 0x0F];
        y[j + 16] = d * (float)kMxfp4Values[b[1 + j] >> 4];
    }
}

// Any ROCmFP type (ids 100..107): decode scale once per half, then codes.
template <uint32_t Type>
inline void deq_rocmfp(const uint8_t* b, float* y) {
    const float s0 = rocmfp::scale(rocmfp::scale_byte(Type, b, 0));
    const float s1 = rocmfp::scale(rocmfp::scale_byte(Type, b, 16));
    for (int j = 0; j < 16; ++j) y[j] = (float)rocmfp::code_value(Type, b, j) * s0;
    for (int j = 16; j < 32; ++j) y[j] = (float)rocmfp::code_value(Type, b, j) * s1;
}

// --- 256-element super-blocks ----------------------------------------------

// Q2_K: { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin }. Element e: sub-block e/16
// (scale low nibble, min high nibble); 2-bit code from qs[(e/128)*32 + e%32] at
// shift 2*((e%128)/32). Value = (d*sc)*q - (dmin*m), rounded after the multiply
// like gguf-py; Fused rounds once (an fma), as the dot kernels' weights (below).
template <bool Fused = false>
inline void deq_q2_k(const uint8_t* b, float* y) {
    const float d = fp16_to_f32(rd_u16(b + 80));
    const float dmin = fp16_to_f32(rd_u16(b + 82));
    for (int s = 0; s < 16; ++s) {
        const float dl = d * (float)(b[s] & 0xF);
        const float ml = dmin * (float)(b[s] >> 4);
        for (int t = 0; t < 16; ++t) {
            const int e = s * 16 + t;
            const int q = (b[16 + (e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            y[e] = Fused ? fma_f32(dl, (float)q, -ml) : dl * (float)q - ml;
        }
    }
}

// Q4_K 6-bit sub-block scale and min k (0..7) from the 12 packed bytes.
inline void q4_k_scale_min(const uint8_t* sc, int k, int* scale, int* min) {
    if (k < 4) {
        *scale = sc[k] & 63;
        *min = sc[k + 4] & 63;
    } else {
        *scale = (sc[k + 4] & 0x0F) | ((sc[k - 4] >> 6) << 4);
        *min = (sc[k + 4] >> 4) | ((sc[k] >> 6) << 4);
    }
}

// Q4_K: { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }. Sub-block k of 32:
// nibble (k&1) of qs[(k/2)*32 + l]. Value = (d*sc)*q - (dmin*m); Fused as Q2_K.
template <bool Fused = false>
inline void deq_q4_k(const uint8_t* b, float* y) {
    const float d = fp16_to_f32(rd_u16(b));
    const float dmin = fp16_to_f32(rd_u16(b + 2));
    const uint8_t* qs = b + 16;
    for (int k = 0; k < 8; ++k) {
        int sc, m;
        q4_k_scale_min(b + 4, k, &sc, &m);
        const float dl = d * (float)sc;
        const float ml = dmin * (float)m;
        const int shift = 4 * (k & 1);
        for (int l = 0; l < 32; ++l) {
            const float q = (float)((qs[(k / 2) * 32 + l] >> shift) & 0x0F);
            y[k * 32 + l] = Fused ? fma_f32(dl, q, -ml) : dl * q - ml;
        }
    }
}

// IQ2_XXS sign byte for a 7-bit index: bit 7 makes the number of set bits even.
inline uint8_t iq2_sign_byte(uint32_t i) {
    return (uint8_t)(i | ((uint32_t)(__builtin_popcount(i) & 1) << 7));
}

const float kSignMul[2] = {1.0f, -1.0f};

// IQ2_XXS: { f16 d; u8 qs[64] }, eight groups of 32 as (u32 grid bytes, u32
// signs/scale). db = (d*(0.5+scale4))*0.25, value = (db*grid)*sign.
inline void deq_iq2_xxs(const uint8_t* b, float* y) {
    const float d = fp16_to_f32(rd_u16(b));
    for (int g = 0; g < 8; ++g) {
        uint32_t aux[2];
        std::memcpy(aux, b + 2 + 8 * g, 8);
        const float db = d * (0.5f + (float)(aux[1] >> 28)) * 0.25f;
        for (int l = 0; l < 4; ++l) {
            const uint64_t row = kIq2xxsGrid[(aux[0] >> (8 * l)) & 0xFF];
            const uint8_t signs = iq2_sign_byte((aux[1] >> (7 * l)) & 127);
            for (int j = 0; j < 8; ++j) {
                const float g8 = (float)((row >> (8 * j)) & 0xFF);
                // A real multiply by -1 (not a negation): gguf-py keeps a nan's sign.
                y[g * 32 + l * 8 + j] = db * g8 * kSignMul[(signs >> j) & 1];
            }
        }
    }
}

// --- float types, one element per "block" ------------------------------------

inline void deq_f32(const uint8_t* b, float* y) { std::memcpy(y, b, 4); }
inline void deq_f16(const uint8_t* b, float* y) { y[0] = fp16_to_f32(rd_u16(b)); }
inline void deq_bf16(const uint8_t* b, float* y) { y[0] = bf16_to_f32(rd_u16(b)); }

using BlockDequant = void (*)(const uint8_t*, float*);

// The block dequantiser for a type id, or nullptr if the engine has no kernel.
inline BlockDequant block_dequant_for(uint32_t id) {
    switch (id) {
        case 0: return deq_f32;
        case 1: return deq_f16;
        case 30: return deq_bf16;
        case 8: return deq_q8_0;
        case 2: return deq_q4_0;
        case 12: return deq_q4_k<false>;
        case 10: return deq_q2_k<false>;
        case 16: return deq_iq2_xxs;
        case 39: return deq_mxfp4;
        case 100: return deq_rocmfp<100>;
        case 101: return deq_rocmfp<101>;
        case 102: return deq_rocmfp<102>;
        case 103: return deq_rocmfp<103>;
        case 104: return deq_rocmfp<104>;
        case 107: return deq_rocmfp<107>;
        default: return nullptr;
    }
}

// The weights the dot kernels multiply, at every dispatch level: the dequantised
// values above, except Q2_K / Q4_K, whose d*q - m every SIMD decoder fuses (one
// rounding). They may differ from gguf-py's in the last bit; dequantize_row does not.
inline BlockDequant block_dot_decoder_for(uint32_t id) {
    switch (id) {
        case 12: return deq_q4_k<true>;
        case 10: return deq_q2_k<true>;
        default: return block_dequant_for(id);
    }
}

}  // namespace
}  // namespace ds4
