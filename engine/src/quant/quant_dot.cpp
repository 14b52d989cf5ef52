// Portable (scalar) quant kernels, argument checks and run-time dispatch.
//
// The scalar dot is the reference of the canonical reduction order (quant_dot.h):
// per column, 16 float lanes, element j of each whole 16-element step into lane
// j % 16 as lane = fma(w, x, lane); then, if 8 elements remain, one more step into
// lanes 0..7; the last < 8 elements fma'd in order into a scalar tail t (from +0);
// finally u_l = (a_l + a_{8+l}) + (a_{4+l} + a_{12+l}) for l < 4 and
// result = ((u_0 + u_2) + (u_1 + u_3)) + t. The AVX2 kernel is this with two 8-lane
// registers, AVX-512 with one 16-lane register; the bits of every level are these.
//
// FP contraction is switched off for this file: the dequantisers must round
// after every multiply like gguf-py's numpy code (a fused d*q - m would differ
// in the last bit), and the dot's own fmas are explicit (fma_f32 of
// dequant_blocks.h: one rounding, from double arithmetic).
// Clang contracts by default; GCC only where the target has FMA (aarch64, or
// -mfma), which the portable x86-64 build never enables here. (engine/CMakeLists
// also passes -ffp-contract=off; the pragma keeps this file right on its own.)
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__) && (defined(__FP_FAST_FMAF) || defined(__FMA__))
#pragma GCC optimize("fp-contract=off")
#endif

#include "quant/quant_dot.h"

#include <algorithm>
#include <string>

#include "common/cpu_features.h"
#include "common/error.h"
#include "quant/dequant_blocks.h"
#include "quant/quant_span.h"
#include "quant/quant_types.h"

namespace ds4 {

namespace {

std::string tensor_label(const char* what) {
    if (what == nullptr || *what == '\0') return "tensor <unnamed>";
    return std::string("tensor '") + what + "'";
}

using DotColsFn = void (*)(uint32_t, const uint8_t*, const float*, int64_t, int, float*, int64_t);

DotColsFn choose_dot_cols() {
#if defined(DS4_X86)
    if (cpu_has_avx2_fma_f16c()) return detail::dot_cols_avx2;
#endif
    return detail::dot_cols_scalar;
}

DotColsFn dot_cols_impl() {
    static const DotColsFn fn = choose_dot_cols();
    return fn;
}

}  // namespace

uint64_t quant_check_row(uint32_t type, int64_t n, const char* what) {
    const QTypeTraits* t = qtype_traits(type);
    if (t == nullptr) {
        throw UnsupportedError(tensor_label(what) + ": unknown quant type id " + std::to_string(type) +
                               " (not a ggml or ROCmFP type this engine knows)");
    }
    if (!t->kernels) {
        throw UnsupportedError(tensor_label(what) + ": quant type " + t->name + " (id " + std::to_string(type) +
                               ") has no dequantise/dot kernel in this engine");
    }
    if (n < 0 || n % t->block_size != 0) {
        throw ArgumentError(tensor_label(what) + ": " + std::to_string(n) + " elements is not a whole number of " +
                            t->name + " blocks (" + std::to_string(t->block_size) + " elements each)");
    }
    return (uint64_t)(n / t->block_size) * t->type_size;
}

void dequantize_row(uint32_t type, const void* row, float* y, int64_t n, const char* what) {
    quant_check_row(type, n, what);
    const QTypeTraits* t = qtype_traits(type);
    const BlockDequant deq = block_dequant_for(type);
    const uint8_t* src = static_cast<const uint8_t*>(row);
    for (int64_t b = 0; b < n / t->block_size; ++b) deq(src + b * t->type_size, y + b * t->block_size);
}

namespace detail {

namespace {

// One column's accumulators in the canonical order (top of the file).
struct Lanes16 {
    float a[16] = {};
    float tail = 0.0f;

    // w, x: the next len elements of the row; every call but the last has len % 16 == 0
    // (spans are whole blocks or kFloatSpan), so lane l always holds elements j % 16 == l.
    void add(const float* w, const float* x, int len) {
        int j = 0;
        for (; j + 16 <= len; j += 16) {
            for (int l = 0; l < 16; ++l) a[l] = fma_f32(w[j + l], x[j + l], a[l]);
        }
        if (j + 8 <= len) {
            for (int l = 0; l < 8; ++l) a[l] = fma_f32(w[j + l], x[j + l], a[l]);
            j += 8;
        }
        for (; j < len; ++j) tail = fma_f32(w[j], x[j], tail);
    }
    float sum() const {
        float u[4];
        for (int l = 0; l < 4; ++l) u[l] = (a[l] + a[8 + l]) + (a[4 + l] + a[12 + l]);
        return ((u[0] + u[2]) + (u[1] + u[3])) + tail;
    }
};

}  // namespace

// Each span is dequantised once per group of kCols columns.
void dot_cols_scalar(uint32_t type, const uint8_t* row, const float* X, int64_t ldx, int ncols, float* out,
                     int64_t n) {
    const RowSpans spans(type, n);
    float tmp[kMaxSpan];
    constexpr int kCols = 8;
    for (int c0 = 0; c0 < ncols; c0 += kCols) {
        const int nc = std::min(kCols, ncols - c0);
        Lanes16 acc[kCols];
        for (int64_t s = 0; s < spans.count(); ++s) {
            const int64_t start = spans.start(s);
            const int len = spans.dequant(row, s, tmp);
            for (int c = 0; c < nc; ++c) acc[c].add(tmp, X + (int64_t)(c0 + c) * ldx + start, len);
        }
        for (int c = 0; c < nc; ++c) out[c0 + c] = acc[c].sum();
    }
}

void fma_f32_array(const float* a, const float* b, const float* c, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = fma_f32(a[i], b[i], c[i]);
}

}  // namespace detail

void dot_row_cols(uint32_t type, const void* row, const float* X, int64_t ldx, int ncols, float* out, int64_t n,
                  const char* what) {
    quant_check_row(type, n, what);
    if (ncols < 0) throw ArgumentError(tensor_label(what) + ": negative column count " + std::to_string(ncols));
    if (ncols > 1 && ldx < n) {
        throw ArgumentError(tensor_label(what) + ": column stride " + std::to_string(ldx) +
                            " is smaller than the row length " + std::to_string(n));
    }
    dot_cols_impl()(type, static_cast<const uint8_t*>(row), X, ldx, ncols, out, n);
}

float dot_row(uint32_t type, const void* row, const float* x, int64_t n, const char* what) {
    float out = 0.0f;
    dot_row_cols(type, row, x, n, 1, &out, n, what);
    return out;
}

void matvec(uint32_t type, const void* W, int64_t row_stride_bytes, int64_t n_rows, const float* x, int64_t n,
            float* y, const char* what) {
    const uint64_t row_bytes = quant_check_row(type, n, what);
    if (n_rows < 0 || (n_rows > 1 && row_stride_bytes < (int64_t)row_bytes)) {
        throw ArgumentError(tensor_label(what) + ": row stride " + std::to_string(row_stride_bytes) +
                            " bytes is smaller than one row (" + std::to_string(row_bytes) + " bytes)");
    }
    const DotColsFn fn = dot_cols_impl();
    const uint8_t* base = static_cast<const uint8_t*>(W);
    for (int64_t r = 0; r < n_rows; ++r) fn(type, base + r * row_stride_bytes, x, n, 1, y + r, n);
}

void matmul_rows(uint32_t type, const void* W, int64_t row_stride_bytes, int64_t n_rows, const float* X,
                 int64_t ldx, int ncols, float* Y, int64_t ldy, int64_t n, const char* what) {
    const uint64_t row_bytes = quant_check_row(type, n, what);
    if (n_rows < 0 || (n_rows > 1 && row_stride_bytes < (int64_t)row_bytes)) {
        throw ArgumentError(tensor_label(what) + ": row stride " + std::to_string(row_stride_bytes) +
                            " bytes is smaller than one row (" + std::to_string(row_bytes) + " bytes)");
    }
    if (ncols < 0) throw ArgumentError(tensor_label(what) + ": negative column count " + std::to_string(ncols));
    if (ncols > 1 && ldx < n) {
        throw ArgumentError(tensor_label(what) + ": column stride " + std::to_string(ldx) +
                            " is smaller than the row length " + std::to_string(n));
    }
    const DotColsFn fn = dot_cols_impl();
    const uint8_t* base = static_cast<const uint8_t*>(W);
#if defined(DS4_X86)
    static const bool use_avx512 = fn == detail::dot_cols_avx2 && cpu_has_avx512();
    if (use_avx512 && n % 16 == 0) {
        return detail::matmul_avx512(type, base, row_stride_bytes, n_rows, X, ldx, ncols, Y, ldy, n);
    }
#endif
    constexpr int kMaxCols = 64;
    float tmp[kMaxCols];
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int c0 = 0; c0 < ncols; c0 += kMaxCols) {
            const int nc = std::min(kMaxCols, ncols - c0);
            fn(type, base + r * row_stride_bytes, X + (int64_t)c0 * ldx, ldx, nc, tmp, n);
            for (int c = 0; c < nc; ++c) Y[(int64_t)(c0 + c) * ldy + r] = tmp[c];
        }
    }
}

const char* quant_dispatch_name() {
#if defined(DS4_X86)
    if (dot_cols_impl() == detail::dot_cols_avx2) return "avx2";
#endif
    return "scalar";
}

}  // namespace ds4
