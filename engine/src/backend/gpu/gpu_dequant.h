// Device-side decoding of weight rows, eight consecutive elements at a time, for every
// type the engine computes with (ggml ids: F32 0, F16 1, Q4_0 2, Q8_0 8, Q2_K 10, Q4_K 12,
// IQ2_XXS 16, BF16 30, MXFP4 39, ROCmFP 100-104 and 107). A chunk of eight never crosses
// a block (blocks are 32 or 256 elements).
//
// Rows are as in the file except Q8_0's, which the backend stores split (WeightStore::bind,
// gpu_layout.cu): a row of nb blocks is the nb x 32 int8 codes, then the nb f16 scales, in
// the same row_bytes. The codes of a chunk are then one aligned 8-byte word, where the
// file's 34-byte blocks allowed 2-byte loads only (five for 8 weights).
//
// load_chunk<TYPE>(row, k, n, grid, w) fills w[0..8) and returns a factor d: element
// 8k + j of the row is w[j] * d. Types whose chunk has one scale (Q8_0, Q4_0, MXFP4, the
// ROCmFP types) return the scale as d and the integer codes as w, so the dot kernels
// multiply it once per chunk; decode_chunk(row, blk, nb, j0, ...) is the same for the chunk
// at element j0 of block blk of a row of nb blocks (the dot kernels call it with a j0 fixed
// per lane). The others return d = 1 and w = the element value, decoded with the same
// float operations as the CPU's dot decoders (quant/dequant_blocks.h, block_dot_decoder_for:
// Q2_K / Q4_K fuse d*q - m into one fma). Weights therefore match the CPU's bit for bit.
// `grid` is the IQ2_XXS codebook in device memory (quant/iq2xxs_grid.h, uploaded once).
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"
#include "core/numerics.h"
#include "quant/rocmfp_codes.h"

namespace ds4 {
namespace gpu {

constexpr int kChunk = 8;

struct alignas(16) uint4_t {
    uint32_t a, b, c, d;
};
struct alignas(8) Word2 {
    uint32_t lo, hi;
};

__device__ inline uint16_t rd16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }
__device__ inline uint32_t rd32(const uint8_t* p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
__device__ inline float h2f(const uint8_t* p) { return ds4::f16_to_f32(rd16(p)); }

// F16 -> F32 by the hardware where there is one (the conversion is exact, so every path
// gives ds4::f16_to_f32's bits).
__device__ inline float f16_bits_to_f32(uint16_t h) {
#if defined(__CUDA_ARCH__) && !defined(__clang__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#elif defined(__HIP_DEVICE_COMPILE__) || (defined(__clang__) && defined(__AMDGCN__))
    return (float)__builtin_bit_cast(_Float16, h);
#else
    return ds4::f16_to_f32(h);
#endif
}

// The f16 at p as a float: ALIGNED (p 2-byte aligned) by one 16-bit load and the hardware's
// conversion, else h2f's two byte loads and the software one (the same value: the conversion is
// exact). The int8 walks had taken h2f for every block's scale, some 15 instructions a lane.
template <bool ALIGNED>
__device__ inline float f16_at(const uint8_t* p) {
    if constexpr (ALIGNED) {
        return f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(p));
    } else {
        return h2f(p);
    }
}

// Small integers to float without the int-to-float converter (an eighth-rate unit on
// NVIDIA's SMs, where it had bounded the experts' decode): 2^23 + u is a float with u in its
// low mantissa bits, and subtracting 2^23 is exact.
// Exact (float)u for 0 <= u < 2^23.
__device__ inline float u_to_f32(uint32_t u) { return ds4::num::f32_of(0x4B000000u | u) - 8388608.0f; }

// Exact (float)(byte j of m) - offset (j a constant; offset 0, 1 for ROCmFP2's code - 1, or 128
// for an int8 stored + 128): on NVIDIA one byte permute builds the float 2^23 + byte, and one
// subtraction ends it.
__device__ inline float magic_byte_to_f32(uint32_t m, int j, float offset = 0.0f) {
#if defined(__CUDA_ARCH__) && !defined(__clang__)
    const uint32_t bits = __byte_perm(m, 0x4B000000u, 0x7540u + (uint32_t)j);  // bytes: m_j, 0, 0, 0x4B
#else
    const uint32_t bits = 0x4B000000u | ((m >> (8 * j)) & 0xFFu);
#endif
    return ds4::num::f32_of(bits) - (8388608.0f + offset);
}

// Exact (float)(int8_t)byte (the low byte of `byte`).
__device__ inline float s8_to_f32(uint32_t byte) { return magic_byte_to_f32(byte ^ 0x80u, 0, 128.0f); }

// MXFP4's shared exponent as 2^(x-127) / 2 (its code values are doubled E2M1).
__device__ inline float e8m0_half(uint8_t x) {
    return ds4::num::f32_of(x < 2 ? (0x00200000u << x) : ((uint32_t)(x - 1) << 23));
}
// The value of a 4-bit code with bit 3 its sign and magnitudes 0, 1, 2, 3 and then the bytes of
// `hi` for 4..7, exact and without the int-to-float unit (0 stays +0): MXFP4's doubled E2M1
// (kMxfp4High) and ROCmFP4's rocmfp::fp4_code_value (kRocmfp4High), by one select and shift
// instead of compare chains.
constexpr uint32_t kMxfp4High = 0x0C080604u, kRocmfp4High = 0x0A080604u;  // 4, 6, 8, 12 / 4, 6, 8, 10
__device__ inline float fp4_sign_mag(uint32_t q, uint32_t hi) {
    const uint32_t m = q & 7u;
    const uint32_t mag = ((m < 4u ? 0x03020100u : hi) >> (8u * (m & 3u))) & 0xFFu;
    const float f = u_to_f32(mag);
    return (q & 8u) ? 0.0f - f : f;
}

// Q4_K's 6-bit scale and min of sub-block k (0..7) from its 12 packed bytes.
__device__ inline void q4k_scale_min(const uint8_t* sc, int k, int* scale, int* min) {
    if (k < 4) {
        *scale = sc[k] & 63;
        *min = sc[k + 4] & 63;
    } else {
        *scale = (sc[k + 4] & 0x0F) | ((sc[k - 4] >> 6) << 4);
        *min = (sc[k + 4] >> 4) | ((sc[k] >> 6) << 4);
    }
}

template <uint32_t TYPE>
struct TypeInfo {
    static constexpr int block = TYPE == 10 || TYPE == 12 || TYPE == 16 ? 256 : (TYPE == 0 || TYPE == 1 || TYPE == 30) ? 1 : 32;
    static constexpr int bytes = TYPE == 0 ? 4 : TYPE == 1 || TYPE == 30 ? 2 : TYPE == 2 ? 18 : TYPE == 8 ? 34
                               : TYPE == 10 ? 84 : TYPE == 12 ? 144 : TYPE == 16 ? 66 : TYPE == 39 ? 17
                               : TYPE == 100 ? 18 : TYPE == 101 ? 17 : TYPE == 102 ? 26 : TYPE == 103 ? 33
                               : TYPE == 104 ? 14 : TYPE == 107 ? 10 : 0;
};

// Quant types: the chunk at element j0 (a multiple of 8) of block blk of a row of nb blocks.
template <uint32_t TYPE>
__device__ inline float decode_chunk(const uint8_t* row, int64_t blk, int64_t nb, int j0, const uint64_t* grid,
                                     float* w) {
    const uint8_t* b = row + blk * TypeInfo<TYPE>::bytes;  // the block, as in the file (not Q8_0)
    if constexpr (TYPE == 8) {  // Q8_0, split: codes at 32 blk, the f16 scale at 32 nb + 2 blk
        for (int j = 0; j < kChunk; ++j) w[j] = s8_to_f32(row[32 * blk + j0 + j]);
        return h2f(row + 32 * nb + 2 * blk);
    } else if constexpr (TYPE == 2) {  // Q4_0: { f16 d; u8 qs[16] }, low nibbles then high
        for (int j = 0; j < kChunk; ++j) {
            const int e = j0 + j;
            w[j] = u_to_f32(e < 16 ? (b[2 + e] & 0x0Fu) : (uint32_t)(b[2 + e - 16] >> 4)) - 8.0f;
        }
        return h2f(b);
    } else if constexpr (TYPE == 39) {  // MXFP4: { u8 e; u8 qs[16] }, nibbles as Q4_0
        for (int j = 0; j < kChunk; ++j) {
            const int e = j0 + j;
            w[j] = fp4_sign_mag(e < 16 ? (b[1 + e] & 0x0Fu) : (uint32_t)(b[1 + e - 16] >> 4), kMxfp4High);
        }
        return e8m0_half(b[0]);
    } else if constexpr (TYPE == 10) {  // Q2_K: { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin }
        const float d = h2f(b + 80), dmin = h2f(b + 82);
        const int s = j0 / 16;  // a chunk lies in one 16-element sub-block
        const float dl = d * u_to_f32(b[s] & 0xFu), ml = dmin * u_to_f32((uint32_t)(b[s] >> 4));
        for (int j = 0; j < kChunk; ++j) {
            const int e = j0 + j;
            const uint32_t q = (b[16 + (e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3u;
            w[j] = ds4_fmaf(dl, u_to_f32(q), -ml);
        }
        return 1.0f;
    } else if constexpr (TYPE == 12) {  // Q4_K: { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }
        const float d = h2f(b), dmin = h2f(b + 2);
        const int sb = j0 / 32;
        int sc, m;
        q4k_scale_min(b + 4, sb, &sc, &m);
        const float dl = d * (float)sc, ml = dmin * (float)m;
        const int shift = 4 * (sb & 1);
        for (int j = 0; j < kChunk; ++j) {
            const int l = (j0 + j) % 32;
            w[j] = ds4_fmaf(dl, u_to_f32((uint32_t)(b[16 + (sb / 2) * 32 + l] >> shift) & 0x0Fu), -ml);
        }
        return 1.0f;
    } else if constexpr (TYPE == 16) {  // IQ2_XXS: { f16 d; 8 x (u32 grid bytes, u32 signs/scale) }
        const int g = j0 / 32, l = (j0 % 32) / 8;  // a chunk is one grid row
        const uint32_t aux0 = rd32(b + 2 + 8 * g), aux1 = rd32(b + 2 + 8 * g + 4);
        const float db = h2f(b) * (0.5f + (float)(aux1 >> 28)) * 0.25f;
        const uint64_t gr = grid[(aux0 >> (8 * l)) & 0xFF];
        uint32_t si = (aux1 >> (7 * l)) & 127;
        si |= (uint32_t)(__builtin_popcount(si) & 1) << 7;
        for (int j = 0; j < kChunk; ++j) {
            w[j] = db * (float)((gr >> (8 * j)) & 0xFF) * (((si >> j) & 1) ? -1.0f : 1.0f);
        }
        return 1.0f;
    } else {  // ROCmFP 100-104, 107: a chunk lies in one half-block, whose scale is the factor
        for (int j = 0; j < kChunk; ++j) w[j] = (float)ds4::rocmfp::code_value(TYPE, b, j0 + j);
        return ds4::rocmfp::scale(ds4::rocmfp::scale_byte(TYPE, b, j0));
    }
}

template <uint32_t TYPE>
__device__ inline float load_chunk(const uint8_t* row, int64_t k, int64_t n, const uint64_t* grid, float* w) {
    const int64_t e0 = k * kChunk;
    if constexpr (TYPE == 0 || TYPE == 1 || TYPE == 30) {  // float rows: zero past n
        for (int j = 0; j < kChunk; ++j) {
            const int64_t e = e0 + j;
            if (e >= n) {
                w[j] = 0.0f;
            } else if constexpr (TYPE == 0) {
                w[j] = ((const float*)row)[e];
            } else if constexpr (TYPE == 1) {
                w[j] = ds4::f16_to_f32(((const uint16_t*)row)[e]);
            } else {
                w[j] = ds4::num::f32_of((uint32_t)((const uint16_t*)row)[e] << 16);
            }
        }
        return 1.0f;
    } else {
        constexpr int QK = TypeInfo<TYPE>::block;
        return decode_chunk<TYPE>(row, e0 / QK, n / QK, (int)(e0 % QK), grid, w);
    }
}

// The alignment (bytes) load_chunk_wide needs of a row's start for its word loads; 0: no
// wide path for the type.
template <uint32_t TYPE>
__host__ __device__ constexpr int wide_alignment() {
    return TYPE == 0 || TYPE == 1 || TYPE == 30 ? 16
           : TYPE == 8                          ? 8
           : TYPE == 10 || TYPE == 12           ? 4
           : TYPE == 2 || TYPE == 100 || TYPE == 107 ? 2
                                                      : 0;
}

// A chunk in two steps, so a lane can have several chunks' loads in flight before it decodes
// any: fetch_chunk<TYPE, WIDE> loads what the chunk at element j0 of block blk needs into a
// RawChunk, decode_raw turns it into decode_chunk's values and factor, bit for bit. Q8_0
// and Q2_K with WIDE (the row starts on wide_alignment<TYPE>()) keep the raw words (3 and 4
// registers); every other case decodes at fetch time and keeps the 9 floats.
template <uint32_t TYPE, bool WIDE>
struct RawChunk {
    static constexpr bool raw = false;
    float w[kChunk];
    float d;
};
template <>
struct RawChunk<8, true> {  // Q8_0: the f16 scale and the 8 int8 codes, little-endian
    static constexpr bool raw = true;
    uint32_t d, q0, q1;
};
template <>
struct RawChunk<10, true> {  // Q2_K: d and dmin, the sub-block's scale byte, the 2 code words
    static constexpr bool raw = true;
    uint32_t dd, sc, q0, q1;
};

template <uint32_t TYPE, bool WIDE>
__device__ inline void fetch_chunk(const uint8_t* row, int64_t blk, int64_t nb, int j0, const uint64_t* grid,
                                   RawChunk<TYPE, WIDE>& r) {
    const uint8_t* b = row + blk * TypeInfo<TYPE>::bytes;  // not Q8_0 (split rows)
    if constexpr (RawChunk<TYPE, WIDE>::raw && TYPE == 8) {  // one 8-byte word of codes, 8-byte aligned rows
        const Word2 q = *reinterpret_cast<const Word2*>(row + 32 * blk + j0);
        r.q0 = q.lo;
        r.q1 = q.hi;
        r.d = *reinterpret_cast<const uint16_t*>(row + 32 * nb + 2 * blk);
    } else if constexpr (RawChunk<TYPE, WIDE>::raw && TYPE == 10) {  // 4-byte aligned blocks of 84
        r.dd = *reinterpret_cast<const uint32_t*>(b + 80);
        r.sc = b[j0 / 16];
        // the chunk's 8 codes: bytes (j0 / 128) * 32 + j0 % 32 .. + 8
        const uint32_t* qw = reinterpret_cast<const uint32_t*>(b + 16 + (j0 / 128) * 32 + j0 % 32);
        r.q0 = qw[0];
        r.q1 = qw[1];
    } else {
        r.d = decode_chunk<TYPE>(row, blk, nb, j0, grid, r.w);
    }
}

// A K-quant chunk's 8 codes as floats (exact) from two words whose bytes hold them at `shift`
// under `mask` (Q2_K 0x03030303, Q4_K 0x0F0F0F0F).
__device__ inline void kquant_codes(uint32_t q0w, uint32_t q1w, int shift, uint32_t mask, float* q) {
    const uint32_t q0 = (q0w >> shift) & mask, q1 = (q1w >> shift) & mask;  // 4 codes each
    for (int j = 0; j < 4; ++j) {
        q[j] = magic_byte_to_f32(q0, j);
        q[4 + j] = magic_byte_to_f32(q1, j);
    }
}

// Q2_K's sub-block scale and min (dl = d * (sc & 15), ml = dmin * (sc >> 4)) from dd (f16 d,
// dmin) and the sub-block's scale byte sc; element j is dl * q_j - ml.
__device__ inline float q2k_scale_min(uint32_t dd, uint32_t sc, float* ml) {
    const float d = f16_bits_to_f32((uint16_t)(dd & 0xFFFFu)), dmin = f16_bits_to_f32((uint16_t)(dd >> 16));
    *ml = dmin * u_to_f32(sc >> 4);
    return d * u_to_f32(sc & 0xFu);
}

// The int8 walks' Q2_K sub-block scale and min (gpu_int8.h lane_dot_q2k_int8 and the expert
// GEMM, which must agree bit for bit): the same dl = d * (sc & 15), ml = dmin * (sc >> 4) as
// q2k_scale_min, each as fma(2^23 + n, d, -2^23 d): 2^23 + n is n's magic float (no subtraction
// after it), and the fma rounds the exact n d once, which a float holds (an f16 times a 4-bit
// integer), so the value is the product's. Only a zero's sign can differ (+0 where d < 0): an
// accumulator that starts at +0 never becomes -0, so no chain sees it (moe_gemm_q2k_sim checks
// every finite f16 d and n). With d infinite or NaN the result is NaN.
struct Q2kScales {
    float d, dmin, d_off, dmin_off;  // d_off = -2^23 d, dmin_off = -2^23 dmin
};
__device__ inline Q2kScales q2k_scales(uint32_t dd) {
    const float d = f16_bits_to_f32((uint16_t)(dd & 0xFFFFu)), dmin = f16_bits_to_f32((uint16_t)(dd >> 16));
    return Q2kScales{d, dmin, d * -8388608.0f, dmin * -8388608.0f};
}
__device__ inline float q2k_scale_min_fma(const Q2kScales& k, uint32_t sc, float* ml) {
    *ml = ds4_fmaf(ds4::num::f32_of(0x4B000000u | (sc >> 4)), k.dmin, k.dmin_off);
    return ds4_fmaf(ds4::num::f32_of(0x4B000000u | (sc & 0xFu)), k.d, k.d_off);
}

// Q2_K's 8 weights of one chunk from its words: dd (f16 d, dmin), the sub-block's scale
// byte sc, the chunk's two code words and the shift of its codes in their bytes.
__device__ inline void decode_q2k_words(uint32_t dd, uint32_t sc, uint32_t q0w, uint32_t q1w, int shift, float* w) {
    float ml;
    const float dl = q2k_scale_min(dd, sc, &ml);
    kquant_codes(q0w, q1w, shift, 0x03030303u, w);
    for (int j = 0; j < kChunk; ++j) w[j] = ds4_fmaf(dl, w[j], -ml);
}

template <uint32_t TYPE, bool WIDE>
__device__ inline float decode_raw(const RawChunk<TYPE, WIDE>& r, int j0, float* w) {
    if constexpr (RawChunk<TYPE, WIDE>::raw && TYPE == 8) {
        const uint32_t t0 = r.q0 ^ 0x80808080u, t1 = r.q1 ^ 0x80808080u;  // int8 + 128, four codes at once
        for (int j = 0; j < 4; ++j) {
            w[j] = magic_byte_to_f32(t0, j, 128.0f);
            w[4 + j] = magic_byte_to_f32(t1, j, 128.0f);
        }
        return f16_bits_to_f32((uint16_t)r.d);
    } else if constexpr (RawChunk<TYPE, WIDE>::raw && TYPE == 10) {
        // the chunk's codes are bits shift, shift + 1 of each byte
        decode_q2k_words(r.dd, r.sc, r.q0, r.q1, 2 * ((j0 % 128) / 32), w);
        return 1.0f;
    } else {
        for (int j = 0; j < kChunk; ++j) w[j] = r.w[j];
        return r.d;
    }
}

// How a lane of the dot kernels (gpu_dot.h lane_chunks) walks a block it visits: `chunks`
// chunks of it, whose loads fetch() issues together into one Raw; decode(raw, s, w) gives
// chunk s's values and factor, and j0(s) its first element, in ascending order. A block is
// shared by kLanes = (block / 8) / chunks lanes; `slot` (0 .. kLanes) is the lane's place
// among them. By default a lane takes one chunk, at element 8 * slot.
//
// Affine walks (the K-quants, whose element j is dl * q_j - ml) decode a chunk's codes instead:
// decode(raw, slot, s, q, &ml) gives the codes q_j and returns dl, and the dot kernels take
// dl * sum(q_j x_j) - ml * sum(x_j) (gpu_dot.h chunk_products), a multiply fewer per weight
// than forming each weight.
template <uint32_t TYPE, bool WIDE>
struct BlockWalk {
    static constexpr int chunks = 1;
    static constexpr bool affine = false;
    static constexpr bool raw = RawChunk<TYPE, WIDE>::raw;
    using Raw = RawChunk<TYPE, WIDE>;
    __device__ static int j0(int slot, int) { return slot * kChunk; }
    __device__ static void fetch(const uint8_t* row, int64_t blk, int64_t nb, int slot, const uint64_t* grid, Raw& r) {
        fetch_chunk<TYPE, WIDE>(row, blk, nb, slot * kChunk, grid, r);
    }
    __device__ static float decode(const Raw& r, int slot, int, float* w) {
        return decode_raw<TYPE, WIDE>(r, slot * kChunk, w);
    }
};

// The word / halfword at b + off for the walks below: one load where the caller knows it is
// aligned (WIDE), else built from bytes, so a walk reads the same values either way.
template <bool WIDE>
__device__ inline uint32_t word_at(const uint8_t* b, int off) {
    if constexpr (WIDE) return *reinterpret_cast<const uint32_t*>(b + off);
    return rd32(b + off);
}
template <bool WIDE>
__device__ inline uint32_t half_at(const uint8_t* b, int off) {
    if constexpr (WIDE) return *reinterpret_cast<const uint16_t*>(b + off);
    return rd16(b + off);
}

// What the Q2_K and Q4_K walks share: the chunks at 128 h + 32 s + i of a 256-element block
// (s = 0..3; slot = 4 h + i / 8).
struct QuadWalk {
    static constexpr int chunks = 4;
    static constexpr bool affine = true;
    static constexpr bool raw = true;
    __device__ static int j0(int slot, int s) { return 128 * (slot / 4) + 32 * s + 8 * (slot % 4); }
};

// Q2_K: a lane takes the 4 chunks at elements 128 g + 32 s + i (s = 0..3; slot = 4 g + i / 8),
// which share their two code words (chunk s is bits 2s, 2s + 1 of each byte). With word
// loads (WIDE: the block starts on 4 bytes) five loads serve 32 weights; one chunk at a
// time had needed four for 8, and the experts' decode had been bound by the bytes a lane
// had in flight. Without, the same words from bytes, so the order is the same either way.
struct Q2KQuad {
    uint32_t dd, sc0, sc1, q0, q1;  // d and dmin; scale bytes 8g .. 8g + 8; the code words
};
template <bool WIDE>
struct BlockWalk<10, WIDE> : QuadWalk {
    using Raw = Q2KQuad;
    __device__ static void fetch(const uint8_t* row, int64_t blk, int64_t, int slot, const uint64_t*, Raw& r) {
        const uint8_t* b = row + blk * TypeInfo<10>::bytes;
        const int g = slot / 4, i = 8 * (slot % 4);
        r.sc0 = word_at<WIDE>(b, 8 * g);
        r.sc1 = word_at<WIDE>(b, 8 * g + 4);
        r.q0 = word_at<WIDE>(b, 16 + 32 * g + i);
        r.q1 = word_at<WIDE>(b, 16 + 32 * g + i + 4);
        r.dd = word_at<WIDE>(b, 80);
    }
    __device__ static float decode(const Raw& r, int slot, int s, float* q, float* ml) {
        // Chunk s lies in sub-block 8g + 2s + i / 16: byte 2 (s % 2) + i / 16 of scale word s / 2.
        const uint32_t sc = ((s < 2 ? r.sc0 : r.sc1) >> (8 * (2 * (s % 2) + (slot % 4) / 2))) & 0xFFu;
        kquant_codes(r.q0, r.q1, 2 * s, 0x03030303u, q);
        return q2k_scale_min(r.dd, sc, ml);
    }
};

// Q4_K: { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }, qs bytes 32p .. 32p + 32 holding
// elements 64p + l (low nibbles) and 64p + 32 + l (high). A lane takes the chunks QuadWalk
// names, as Q2_K's: their codes are the 8 bytes at 64h + i (low, then high nibbles) and the 8
// at 64h + 32 + i. Eight word loads serve 32 weights; the byte decoder had loaded every code
// byte and scale byte alone.
struct Q4KQuad {
    uint32_t dd, sc0, sc1, sc2, qa0, qa1, qb0, qb1;  // d and dmin; the 12 scale bytes; the code words
};
template <bool WIDE>
struct BlockWalk<12, WIDE> : QuadWalk {
    using Raw = Q4KQuad;
    __device__ static void fetch(const uint8_t* row, int64_t blk, int64_t, int slot, const uint64_t*, Raw& r) {
        const uint8_t* b = row + blk * TypeInfo<12>::bytes;
        const int h = slot / 4, i = 8 * (slot % 4);
        r.dd = word_at<WIDE>(b, 0);
        r.sc0 = word_at<WIDE>(b, 4);
        r.sc1 = word_at<WIDE>(b, 8);
        r.sc2 = word_at<WIDE>(b, 12);
        r.qa0 = word_at<WIDE>(b, 16 + 64 * h + i);
        r.qa1 = word_at<WIDE>(b, 16 + 64 * h + i + 4);
        r.qb0 = word_at<WIDE>(b, 16 + 64 * h + 32 + i);
        r.qb1 = word_at<WIDE>(b, 16 + 64 * h + 32 + i + 4);
    }
    __device__ static uint32_t scale_byte(const Raw& r, int x) {
        return ((x < 4 ? r.sc0 : x < 8 ? r.sc1 : r.sc2) >> (8 * (x % 4))) & 0xFFu;
    }
    __device__ static float decode(const Raw& r, int slot, int s, float* q, float* ml) {
        const int k = 4 * (slot / 4) + s;  // the chunk's sub-block; q4k_scale_min's unpacking
        uint32_t sc, m;
        if (k < 4) {
            sc = scale_byte(r, k) & 63u;
            m = scale_byte(r, k + 4) & 63u;
        } else {
            sc = (scale_byte(r, k + 4) & 0x0Fu) | ((scale_byte(r, k - 4) >> 6) << 4);
            m = (scale_byte(r, k + 4) >> 4) | ((scale_byte(r, k) >> 6) << 4);
        }
        const float d = f16_bits_to_f32((uint16_t)(r.dd & 0xFFFFu)), dmin = f16_bits_to_f32((uint16_t)(r.dd >> 16));
        *ml = dmin * u_to_f32(m);
        kquant_codes(s < 2 ? r.qa0 : r.qb0, s < 2 ? r.qa1 : r.qb1, 4 * (s % 2), 0x0F0F0F0Fu, q);
        return d * u_to_f32(sc);
    }
};

// What the whole-block walks share: a lane takes the 4 chunks of a 32-element block, in order.
struct WholeBlockWalk {
    static constexpr int chunks = 4;
    static constexpr bool affine = false;
    static constexpr bool raw = true;
    __device__ static int j0(int, int s) { return 8 * s; }
};

// Types whose 32-element block holds 16 bytes of 4-bit codes, element j < 16 the low nibble of
// byte j and j >= 16 the high nibble of byte j - 16, and a factor per half-block: Q4_0 ({ f16 d;
// qs[16] }, code - 8), MXFP4 ({ u8 e; qs[16] }, doubled E2M1), ROCmFP4 (100: { qs[16]; e[2] },
// 101: { qs[16]; e }). A lane takes a whole block, its 4 chunks in order (0, 1: low nibbles of
// bytes 0..7 and 8..15; 2, 3: high), loading the codes as 8 halfwords and the factor once; the
// byte decoder had loaded a code byte per weight and the factor per chunk. WIDE: blocks and
// their codes start on 2 bytes (Q4_0, ROCmFP4 100); otherwise the same halfwords from bytes.
template <uint32_t TYPE, bool WIDE>
struct NibbleWalk : WholeBlockWalk {
    static constexpr int qs_at = TYPE == 2 ? 2 : TYPE == 39 ? 1 : 0;  // the codes' offset in the block
    struct Raw {
        uint32_t h[8];  // code bytes 2k, 2k + 1 in h[k]
        uint32_t f;     // the factor's bytes: Q4_0's f16, MXFP4's e, ROCmFP4's e[0] | e[1] << 8
    };
    __device__ static void fetch(const uint8_t* row, int64_t blk, int64_t, int, const uint64_t*, Raw& r) {
        const uint8_t* b = row + blk * TypeInfo<TYPE>::bytes;
        for (int k = 0; k < 8; ++k) r.h[k] = half_at<WIDE>(b, qs_at + 2 * k);
        r.f = TYPE == 2     ? half_at<WIDE>(b, 0)
              : TYPE == 39  ? b[0]
              : TYPE == 101 ? (uint32_t)b[16] * 0x101u
                            : half_at<WIDE>(b, 16);
    }
    __device__ static float value(uint32_t q) {  // decode_chunk's value of code q
        if constexpr (TYPE == 2) return u_to_f32(q) - 8.0f;
        if constexpr (TYPE == 39) return fp4_sign_mag(q, kMxfp4High);
        return fp4_sign_mag(q, kRocmfp4High);
    }
    __device__ static float decode(const Raw& r, int, int s, float* w) {
        const int shift = 4 * (s / 2);
        for (int k = 0; k < 4; ++k) {
            const uint32_t x = r.h[4 * (s % 2) + k];
            w[2 * k] = value((x >> shift) & 0x0Fu);
            w[2 * k + 1] = value((x >> (8 + shift)) & 0x0Fu);
        }
        if constexpr (TYPE == 2) return f16_bits_to_f32((uint16_t)r.f);
        if constexpr (TYPE == 39) return e8m0_half((uint8_t)r.f);
        return ds4::rocmfp::scale((uint8_t)(r.f >> (8 * (s / 2))));
    }
};

// ROCmFP2 (107: { u8 qs[8]; u8 e[2] }): element j the 2-bit code (qs[j / 4] >> 2 (j % 4)) & 3
// standing for code - 1, scale e[j / 16]. A lane takes a whole block as NibbleWalk's lanes do:
// four halfwords of codes (chunk s in the s-th) and one of both scales for 32 weights.
template <bool WIDE>
struct Fp2Walk : WholeBlockWalk {
    struct Raw {
        uint32_t h[4], e;  // code bytes 2s, 2s + 1 in h[s]; e[0] | e[1] << 8
    };
    __device__ static void fetch(const uint8_t* row, int64_t blk, int64_t, int, const uint64_t*, Raw& r) {
        const uint8_t* b = row + blk * TypeInfo<107>::bytes;
        for (int k = 0; k < 4; ++k) r.h[k] = half_at<WIDE>(b, 2 * k);
        r.e = half_at<WIDE>(b, 8);
    }
    __device__ static float decode(const Raw& r, int, int s, float* w) {
        for (int t = 0; t < 2; ++t) {  // 4 codes of one byte into the low bits of 4 bytes
            const uint32_t x = (r.h[s] >> (8 * t)) & 0xFFu;
            const uint32_t q = (x | (x << 6) | (x << 12) | (x << 18)) & 0x03030303u;
            for (int j = 0; j < 4; ++j) w[4 * t + j] = magic_byte_to_f32(q, j, 1.0f);  // code - 1, exact
        }
        return ds4::rocmfp::scale((uint8_t)(r.e >> (8 * (s / 2))));
    }
};
template <bool WIDE>
struct BlockWalk<2, WIDE> : NibbleWalk<2, WIDE> {};
template <bool WIDE>
struct BlockWalk<39, WIDE> : NibbleWalk<39, WIDE> {};
template <bool WIDE>
struct BlockWalk<100, WIDE> : NibbleWalk<100, WIDE> {};
template <bool WIDE>
struct BlockWalk<101, WIDE> : NibbleWalk<101, WIDE> {};
template <bool WIDE>
struct BlockWalk<107, WIDE> : Fp2Walk<WIDE> {};

// load_chunk with word and vector loads for the types the real model streams (Q8_0, Q2_K
// and the float rows), when `wide` (the row starts on wide_alignment<TYPE>() and rows are a
// multiple of it apart); the same values and factor as load_chunk, bit for bit.
template <uint32_t TYPE>
__device__ inline float load_chunk_wide(const uint8_t* row, int64_t k, int64_t n, const uint64_t* grid, float* w,
                                        bool wide) {
    if constexpr (wide_alignment<TYPE>() != 0) {
        if (wide) {
            const int64_t e0 = k * kChunk;
            if constexpr (TYPE == 0 || TYPE == 1 || TYPE == 30) {
                if (e0 + kChunk <= n) {
                    if constexpr (TYPE == 0) {
                        const uint32_t* p = reinterpret_cast<const uint32_t*>(row) + e0;
                        for (int h = 0; h < 2; ++h) {
                            const uint4_t v = reinterpret_cast<const uint4_t*>(p)[h];
                            w[4 * h] = ds4::num::f32_of(v.a), w[4 * h + 1] = ds4::num::f32_of(v.b);
                            w[4 * h + 2] = ds4::num::f32_of(v.c), w[4 * h + 3] = ds4::num::f32_of(v.d);
                        }
                    } else {
                        const uint4_t v = *reinterpret_cast<const uint4_t*>(row + 2 * e0);
                        const uint32_t words[4] = {v.a, v.b, v.c, v.d};
                        for (int j = 0; j < 4; ++j) {
                            const uint16_t lo = (uint16_t)(words[j] & 0xFFFFu), hi = (uint16_t)(words[j] >> 16);
                            if constexpr (TYPE == 1) {
                                w[2 * j] = f16_bits_to_f32(lo), w[2 * j + 1] = f16_bits_to_f32(hi);
                            } else {
                                w[2 * j] = ds4::num::f32_of((uint32_t)lo << 16);
                                w[2 * j + 1] = ds4::num::f32_of((uint32_t)hi << 16);
                            }
                        }
                    }
                    return 1.0f;
                }
            } else {
                constexpr int QK = TypeInfo<TYPE>::block;
                const int j0 = (int)(e0 % QK);
                RawChunk<TYPE, true> r;
                fetch_chunk<TYPE, true>(row, e0 / QK, n / QK, j0, grid, r);
                return decode_raw<TYPE, true>(r, j0, w);
            }
        }
    }
    return load_chunk<TYPE>(row, k, n, grid, w);
}

}  // namespace gpu
}  // namespace ds4
