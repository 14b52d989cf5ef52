#include "gguf/gguf_utf8.h"

namespace ds4 {

size_t utf8_sequence_length(const uint8_t* s, size_t n) {
    if (n == 0) return 0;
    const uint8_t c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;        // overlong
        else if (c == 0xED) hi = 0x9F;   // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;        // overlong
        else if (c == 0xF4) hi = 0x8F;   // above U+10FFFF
    } else {
        return 0;
    }
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; ++k) {
        if (s[k] < 0x80 || s[k] > 0xBF) return 0;
    }
    return len;
}

bool utf8_valid(const uint8_t* s, size_t n) {
    size_t i = 0;
    while (i < n) {
        // Fast path for ASCII runs, which is nearly every key and most strings.
        if (s[i] < 0x80) {
            ++i;
            continue;
        }
        const size_t len = utf8_sequence_length(s + i, n - i);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

}  // namespace ds4
