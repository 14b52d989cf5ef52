#include "tokenizer/unicode_classes.h"

#include <algorithm>
#include <iterator>

namespace ds4::tok {

#include "tokenizer/unicode_classes.inc"

namespace {

// The BMP is looked up in a flat 64 KiB table built once; the rarer
// supplementary planes fall back to binary search over the ranges.
struct BmpTable {
    uint8_t cls[0x10000];
    BmpTable() {
        std::fill(std::begin(cls), std::end(cls), static_cast<uint8_t>(kOther));
        for (const UnicodeRange& r : kUnicodeRanges) {
            if (r.first > 0xFFFF) break;
            uint32_t last = std::min<uint32_t>(r.last, 0xFFFF);
            for (uint32_t cp = r.first; cp <= last; ++cp) cls[cp] = r.cls;
        }
    }
};

const BmpTable& bmp_table() {
    static const BmpTable table;
    return table;
}

}  // namespace

CharClass char_class(uint32_t cp) {
    if (cp <= 0xFFFF) return static_cast<CharClass>(bmp_table().cls[cp]);
    const UnicodeRange* end = std::end(kUnicodeRanges);
    const UnicodeRange* it = std::upper_bound(std::begin(kUnicodeRanges), end, cp,
                                              [](uint32_t v, const UnicodeRange& r) { return v < r.first; });
    if (it == std::begin(kUnicodeRanges)) return kOther;
    --it;
    return cp <= it->last ? it->cls : kOther;
}

const char* unicode_version() { return kUnicodeVersion; }

}  // namespace ds4::tok
