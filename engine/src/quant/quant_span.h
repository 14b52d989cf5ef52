// How a row is walked by the dot kernels: as a sequence of spans, each one
// block of a quantised type (32 or 256 elements), or 64 elements of a float type
// (F32/F16/BF16 rows need not be a multiple of anything; the last span is
// shorter). Span boundaries depend only on the type and n, which keeps every
// kernel's reduction order independent of how many columns it serves. Spans
// hold the dot kernels' weights (block_dot_decoder_for).
// Internal linkage for the same reason as dequant_blocks.h.
#pragma once
#include <cstdint>

#include "quant/dequant_blocks.h"
#include "quant/quant_types.h"

namespace ds4 {
namespace {

constexpr int kMaxSpan = 256;
constexpr int kFloatSpan = 64;

class RowSpans {
public:
    RowSpans(uint32_t type, int64_t n) : n_(n), deq_(block_dot_decoder_for(type)) {
        const QTypeTraits* t = qtype_traits(type);
        block_ = t->block_size;
        bytes_ = t->type_size;
        span_ = block_ == 1 ? kFloatSpan : (int)block_;
    }
    int64_t count() const { return (n_ + span_ - 1) / span_; }
    int64_t start(int64_t s) const { return s * span_; }
    int length(int64_t s) const {
        const int64_t left = n_ - s * span_;
        return left < span_ ? (int)left : span_;
    }
    // Bytes of span s inside the row.
    const uint8_t* bytes(const uint8_t* row, int64_t s) const {
        return row + (s * span_ / block_) * bytes_;
    }
    // Dequantise span s into y (kMaxSpan floats); returns its length.
    int dequant(const uint8_t* row, int64_t s, float* y) const {
        const int len = length(s);
        const uint8_t* src = bytes(row, s);
        if (block_ == 1) {
            for (int j = 0; j < len; ++j) deq_(src + (int64_t)j * bytes_, y + j);
        } else {
            deq_(src, y);
        }
        return len;
    }

private:
    int64_t n_;
    BlockDequant deq_;
    uint32_t block_ = 1;
    uint32_t bytes_ = 4;
    int span_ = kFloatSpan;
};

}  // namespace
}  // namespace ds4
