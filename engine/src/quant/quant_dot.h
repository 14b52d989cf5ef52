// Dequantisation and row dot products against float32 activations for the
// quantised types the engine computes with (QTypeTraits::kernels).
//
// The bits of a dot product (the definition every implementation follows: scalar,
// AVX2, AVX-512, and any future one such as NEON). The weights w are the block
// dequantised values (dequantize_row), except Q2_K / Q4_K, whose d*q - m is one
// fma (one rounding). For a row of n elements against x, in float32:
//   - 16 lanes a_0..a_15 from +0; each whole 16-element step j..j+15 does
//     a_l = fma(w[j+l], x[j+l], a_l) for l = 0..15, in element order;
//   - then, if >= 8 elements remain, one 8-element step into a_0..a_7 the same way;
//   - the last n % 8 elements go, in order, into a scalar t = fma(w, x, t) from +0;
//   - u_l = (a_l + a_{8+l}) + (a_{4+l} + a_{12+l}) for l = 0..3, and the result is
//     ((u_0 + u_2) + (u_1 + u_3)) + t.
// (AVX2 holds a_0..7 and a_8..15 in two 8-lane registers, AVX-512 in one 16-lane
// register; a 4-lane ISA uses four.) fma is the single-rounding fused multiply-add.
// Nan payloads and signs are not part of the contract.
//
// Determinism contract (what batch-invariant verify relies on):
//   - dot_row_cols gives, for every column, exactly the bits dot_row gives on
//     that column alone, whatever ncols is; matvec and matmul_rows too, per element.
//   - the dispatch level (scalar / avx2 / avx512) is fixed per process (see
//     common/cpu_features.h, DS4KIT_CPU_FEATURES caps it); every level gives the
//     bits defined above, so the levels agree bit for bit.
// Errors: a type id without kernels throws ds4::UnsupportedError, a length that
// is not a whole number of blocks or a buffer of the wrong size throws
// ds4::ArgumentError; both messages name `what` (the tensor) and the type id.
#pragma once
#include <cstdint>
#include <string>

namespace ds4 {

// Row dequantisation (scalar reference; bitwise equal to gguf-py for standard
// types). `row` holds n elements (a whole number of blocks).
void dequantize_row(uint32_t type, const void* row, float* y, int64_t n, const char* what = nullptr);

// sum_i w[i] * x[i] over one row of n elements.
float dot_row(uint32_t type, const void* row, const float* x, int64_t n, const char* what = nullptr);

// out[c] = dot_row(type, row, X + c*ldx, n) for c in [0, ncols), bit for bit.
void dot_row_cols(uint32_t type, const void* row, const float* X, int64_t ldx, int ncols, float* out,
                  int64_t n, const char* what = nullptr);

// y[r] = dot_row(type, W + r*row_stride_bytes, x, n) for r in [0, n_rows).
void matvec(uint32_t type, const void* W, int64_t row_stride_bytes, int64_t n_rows, const float* x,
            int64_t n, float* y, const char* what = nullptr);

// Y[c*ldy + r] = dot_row(type, W + r*row_stride_bytes, X + c*ldx, n) for r < n_rows,
// c < ncols, bit for bit; arguments are checked once, not per row.
void matmul_rows(uint32_t type, const void* W, int64_t row_stride_bytes, int64_t n_rows, const float* X,
                 int64_t ldx, int ncols, float* Y, int64_t ldy, int64_t n, const char* what = nullptr);

// Throws the errors above if `type` has no kernels or n is not a whole number of
// blocks; returns the byte size of one row of n elements.
uint64_t quant_check_row(uint32_t type, int64_t n, const char* what);

// "avx2" or "scalar": the dot-product implementation this process uses.
const char* quant_dispatch_name();

namespace detail {
// Per-ISA kernels (same contract as dot_row_cols), n already validated. The scalar
// one is the plain statement of the order above.
void dot_cols_scalar(uint32_t type, const uint8_t* row, const float* X, int64_t ldx, int ncols,
                     float* out, int64_t n);
// out[i] = fma(a[i], b[i], c[i]) through the portable kernels' fma (for tests).
void fma_f32_array(const float* a, const float* b, const float* c, float* out, int64_t n);
#if defined(DS4_X86)
void dot_cols_avx2(uint32_t type, const uint8_t* row, const float* X, int64_t ldx, int ncols,
                   float* out, int64_t n);
// The row dequantised with the AVX2 decoders into y (32-byte aligned, n floats).
void dequant_row_avx2(uint32_t type, const uint8_t* row, int64_t n, float* y);
// matmul_rows for n % 16 == 0 with AVX-512 register tiles: bit for bit what
// dot_cols_avx2 gives (one 16-lane accumulator holds its two 8-lane ones).
void matmul_avx512(uint32_t type, const uint8_t* W, int64_t row_stride_bytes, int64_t n_rows, const float* X,
                   int64_t ldx, int ncols, float* Y, int64_t ldy, int64_t n);
#endif
}  // namespace detail

}  // namespace ds4
