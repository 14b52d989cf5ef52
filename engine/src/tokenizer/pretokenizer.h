// The joyai-llm pre-tokenizer, written out by hand instead of with a regex engine.
//
// HF tokenizers (the reference) applies three Split(Isolated) regexes in sequence,
// each to every piece the previous one produced, then maps bytes (ByteLevel):
//   1. \p{N}{1,3}
//   2. [一-龥぀-ゟ゠-ヿ]+
//   3. [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
//      | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ | ?[\p{P}\p{S}]+[\r\n]* | \s*[\r\n]+
//      | \s+(?!\S) | \s+
// "Isolated" means every match and every unmatched stretch between matches
// becomes its own piece, and each regex sees only the piece it is given (so the
// look-ahead in \s+(?!\S) stops at the piece's end).
//
// Invalid UTF-8 (bytes input only): each byte that does not start a valid
// sequence becomes a piece of its own and separates the valid text around it,
// which is pre-tokenized as if it were two separate strings.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ds4::tok {

struct Piece {
    uint32_t begin;  // byte offsets into the text
    uint32_t end;
};

// Reusable buffers so that splitting allocates nothing once warmed up.
struct PreTokenScratch {
    std::vector<uint32_t> cp;    // code points of the current valid stretch
    std::vector<uint32_t> off;   // byte offset of each code point, plus one past the end
    std::vector<uint8_t> cls;    // CharClass of each code point
};

// Appends the pieces of s[0..n) to out, in order; they tile the input exactly.
void pretokenize_joyai(const unsigned char* s, size_t n, PreTokenScratch& scratch, std::vector<Piece>& out);

}  // namespace ds4::tok
