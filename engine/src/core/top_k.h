// The order Backend::row_top_k ranks a row's values by, shared by the CPU and GPU backends:
// larger values first, an equal value at a lower index first, NaN below every number (the
// sampler's greedy rule, lowest id wins a tie). -0 and +0 are equal. One 64-bit word per
// element, (rank_key(value) << 32) | ~index, orders elements exactly so (larger word first).
#pragma once
#include <stdint.h>

#include "core/hd.h"
#include "core/numerics.h"

namespace ds4 {

// Most values row_top_k returns per row (it is for greedy decoding and margins, not sampling).
constexpr int64_t kMaxRowTopK = 64;

// A key whose unsigned order is the values' order (NaN: 0, below -inf's key).
DS4_HD inline uint32_t rank_key(float v) {
    if (v != v) return 0;
    const uint32_t u = v == 0.0f ? 0u : num::bits_f32(v);
    return (u >> 31) ? ~u : (u | 0x80000000u);
}

DS4_HD inline uint64_t rank_word(float v, int64_t index) {
    return ((uint64_t)rank_key(v) << 32) | (uint64_t)(0xffffffffu - (uint32_t)index);
}
DS4_HD inline int64_t rank_word_index(uint64_t w) { return (int64_t)(0xffffffffu - (uint32_t)(w & 0xffffffffu)); }

}  // namespace ds4
