// Character classes for the joyai-llm pre-tokenizer, and strict UTF-8 decoding.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ds4::tok {

// The only distinctions the pre-tokenizer regexes make (see gen_unicode_tables.py).
enum CharClass : uint8_t { kOther = 0, kLM = 1, kN = 2, kPS = 3, kWS = 4 };

struct UnicodeRange {
    uint32_t first;
    uint32_t last;
    CharClass cls;
};

// Class of a code point (kOther for unassigned, control, format, private use).
CharClass char_class(uint32_t cp);

// Unicode version the class tables were generated from.
const char* unicode_version();

// [一-龥぀-ゟ゠-ヿ]: the CJK/kana set of the second pre-tokenizer split.
inline bool is_cjk_split_char(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FA5) || (cp >= 0x3040 && cp <= 0x30FF);
}

// Decodes one strictly valid UTF-8 sequence (no overlongs, surrogates or values
// above U+10FFFF) at s[0..n). Returns its length (1..4) and sets *cp, or 0 if the
// bytes there do not start a valid sequence.
inline size_t utf8_decode(const unsigned char* s, size_t n, uint32_t* cp) {
    unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    if (c < 0xC2) return 0;
    if (c < 0xE0) {
        if (n < 2 || (s[1] & 0xC0) != 0x80) return 0;
        *cp = ((c & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    if (c < 0xF0) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        uint32_t v = ((c & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        if (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF)) return 0;
        *cp = v;
        return 3;
    }
    if (c < 0xF5) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        uint32_t v = ((c & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        if (v < 0x10000 || v > 0x10FFFF) return 0;
        *cp = v;
        return 4;
    }
    return 0;
}

}  // namespace ds4::tok
