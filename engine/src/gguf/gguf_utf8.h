// Strict UTF-8 checks for GGUF keys, names and strings. Strict means what
// Python's decoder accepts: no overlong forms, no surrogates, nothing above
// U+10FFFF, so every string the reader hands out converts to a Python str.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ds4 {

// Length of the valid UTF-8 sequence starting at s[0] (1..4), or 0 if invalid/cut.
size_t utf8_sequence_length(const uint8_t* s, size_t n);
bool utf8_valid(const uint8_t* s, size_t n);
inline bool utf8_valid(const std::string& s) {
    return utf8_valid(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace ds4
