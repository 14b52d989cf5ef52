// Lucebox ROCmFP scale and code decoding (ds4-model.md section 5), shared by the
// CPU kernels and the CUDA/HIP dequantise kernel: header-only, no std library,
// every function DS4_HD.
//
// Spec (what this file implements):
//   scale byte e (one per 32-block, or e[0] for elements 0..15 and e[1] for 16..31):
//     e > 0x7E            -> 0
//     e >> 3 == 0         -> (e & 7) * 2^-10           (subnormal range)
//     otherwise           -> (8 + (e & 7)) * 2^((e >> 3) - 11)
//   This is unsigned E4M3 (bias 7) halved; 0x7F (the E4M3 NaN) and above read as 0.
//   element value = float(integer code value) * scale, exact in float32
//   (|code| <= 127 and the scale has 4 significant bits).
//
// What was checked against public ROCmFP sources with the search tool, where the
// spec is terse (read only, nothing copied; the sources are ROCmFPX llama.cpp
// forks and a Lucebox-derived engine, not Lucebox's own ggml, which the index
// does not hold):
//   - 3-bit and 6-bit streams are LSB-first: code i is bits [w*i, w*i+w) of the
//     little-endian byte stream (the CUDA readers take (window >> (w*i & 7)) & mask
//     from byte w*i>>3), so a code may straddle two bytes.
//   - block structs are { qs[...]; e[...] }: codes first, scale bytes last; the
//     two-scale types use e[0] for elements 0..15 and e[1] for 16..31 (for
//     Q4_0_ROCMFP4: low nibbles = elements 0..15, high nibbles = 16..31).
//   - the ROCmFP4 and ROCmFPX scale tables dumped by one port are identical and
//     equal this s(e) (e = 1 -> 2^-10), so all six types share one scale.
//   Divergences found and NOT followed (the spec governs; the tests pin the spec):
//   - the ROCmFPX fork's own Q2 codebook is {-4,-1,+1,+4}; builds with
//     ROCMFP2_AFFINE read the two trailing bytes as scale + offset. The spec, and
//     (per a public reader audit) the writer of the DS4 ROCMFP2 files, use
//     {-1,0,1,2} with two half-block scales, which is what we decode.
//   - one ROCmFPX version decodes the 6-bit "negative zero" (0x20) as -32; the
//     spec and another public CUDA reader decode it as 0, which we follow.
#pragma once
#include <stdint.h>

#include "core/hd.h"

namespace ds4 {
namespace rocmfp {

// Exact 2^k for -126 <= k <= 127, built from the bit pattern (no libm on device).
DS4_HD inline float pow2i(int k) {
    const uint32_t bits = (uint32_t)(k + 127) << 23;
    float f;
    __builtin_memcpy(&f, &bits, sizeof f);
    return f;
}

// s(e) as in the spec; 0 for e > 0x7E.
DS4_HD inline float scale(uint8_t e) {
    if (e > 0x7E) return 0.0f;
    const int ex = e >> 3;
    const int m = e & 7;
    if (ex == 0) return (float)m * pow2i(-10);
    return (float)(8 + m) * pow2i(ex - 11);
}

// ROCmFP4 nibble: bit 3 sign, low 3 bits index {0,1,2,3,4,6,8,10}.
DS4_HD inline int fp4_code_value(uint32_t q) {
    const int m = (int)(q & 7u);
    const int mag = m <= 4 ? m : 2 * m - 4;
    return (q & 8u) ? -mag : mag;
}

// ROCmFP2 2-bit code -> {-1, 0, 1, 2}.
DS4_HD inline int fp2_code_value(uint32_t c) { return (int)(c & 3u) - 1; }

// ROCmFPX 3-bit code: bit 2 sign, bits 0-1 index {0,1,2,4}.
DS4_HD inline int fp3_code_value(uint32_t c) {
    const uint32_t m = c & 3u;
    const int mag = m == 3u ? 4 : (int)m;
    return (c & 4u) ? -mag : mag;
}

// ROCmFPX 6-bit code: bit 5 sign, bits 0-4 magnitude 0..31.
DS4_HD inline int fp6_code_value(uint32_t c) {
    const int mag = (int)(c & 31u);
    return (c & 32u) ? -mag : mag;
}

// Code i of width w (<= 8) from an LSB-first bit stream of nbytes bytes.
DS4_HD inline uint32_t stream_code(const uint8_t* qs, int nbytes, int i, int w) {
    const int bit = i * w;
    const int byte = bit >> 3;
    uint32_t window = qs[byte];
    if (byte + 1 < nbytes) window |= (uint32_t)qs[byte + 1] << 8;
    return (window >> (bit & 7)) & ((1u << w) - 1u);
}

// Bytes per 32-element block of each ROCmFP type; 0 for any other id.
DS4_HD inline int block_bytes(uint32_t type) {
    switch (type) {
        case 100: return 18;  // Q4_0_ROCMFP4:      qs[16], e[2]
        case 101: return 17;  // Q4_0_ROCMFP4_FAST: qs[16], e
        case 102: return 26;  // Q6_0_ROCMFPX:      qs[24], e[2]
        case 103: return 33;  // Q8_0_ROCMFPX:      int8 qs[32], e
        case 104: return 14;  // Q3_0_ROCMFPX:      qs[12], e[2]
        case 107: return 10;  // Q2_0_ROCMFP2:      qs[8], e[2]
        default: return 0;
    }
}

// Integer code value of element j (0..31) of one block.
DS4_HD inline int code_value(uint32_t type, const uint8_t* blk, int j) {
    switch (type) {
        case 100:
        case 101: return fp4_code_value(j < 16 ? (blk[j] & 0x0Fu) : (uint32_t)(blk[j - 16] >> 4));
        case 102: return fp6_code_value(stream_code(blk, 24, j, 6));
        case 103: return (int)(int8_t)blk[j];
        case 104: return fp3_code_value(stream_code(blk, 12, j, 3));
        case 107: return fp2_code_value((uint32_t)(blk[j >> 2] >> (2 * (j & 3))));
        default: return 0;
    }
}

// Scale byte that element j (0..31) of one block uses.
DS4_HD inline uint8_t scale_byte(uint32_t type, const uint8_t* blk, int j) {
    switch (type) {
        case 100: return blk[16 + (j >= 16)];
        case 101: return blk[16];
        case 102: return blk[24 + (j >= 16)];
        case 103: return blk[32];
        case 104: return blk[12 + (j >= 16)];
        case 107: return blk[8 + (j >= 16)];
        default: return 0;
    }
}

// Element j (0..31) of one block as float32 (exact).
DS4_HD inline float element(uint32_t type, const uint8_t* blk, int j) {
    return (float)code_value(type, blk, j) * scale(scale_byte(type, blk, j));
}

}  // namespace rocmfp
}  // namespace ds4
