// GPT-2's byte-level alphabet: every byte is shown as one printable code point,
// so vocabulary strings (GGUF tokenizer.ggml.tokens / merges) never hold raw bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ds4::tok {

// Code point that stands for byte b.
uint32_t byte_to_codepoint(uint8_t b);

// Inverse of the alphabet for a whole string: sets *out to the raw bytes and
// returns true, or returns false if some character is outside the alphabet.
bool byte_level_decode(std::string_view text, std::string* out);

// UTF-8 of byte_to_codepoint(b).
std::string byte_level_char(uint8_t b);

}  // namespace ds4::tok
