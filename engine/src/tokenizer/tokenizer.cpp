#include "tokenizer/tokenizer.h"

#include <cstdio>
#include <limits>

#include "common/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode_classes.h"

namespace ds4 {

namespace {

constexpr const char* kSupportedPre = "joyai-llm";

// Buffers for one encode call; sized once per call, never per token.
struct EncodeScratch {
    tok::PreTokenScratch pre;
    std::vector<tok::Piece> pieces;
    tok::BpeScratch bpe;
};

std::string quoted(std::string_view s) {
    constexpr size_t kMax = 80;
    std::string q = "'";
    q.append(s.substr(0, kMax));
    if (s.size() > kMax) q += "...";
    return q + "'";
}

}  // namespace

Tokenizer::Tokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges,
                     const std::vector<int32_t>& token_types, const std::string& pre, int32_t bos_id,
                     int32_t eos_id)
    : texts_(std::move(tokens)), pre_(pre), bos_id_(bos_id), eos_id_(eos_id) {
    if (pre_ != kSupportedPre)
        throw UnsupportedError("tokenizer.ggml.pre = " + quoted(pre_) + " is not supported (supported: '" +
                               kSupportedPre + "')");
    const size_t n = texts_.size();
    if (n == 0) throw FormatError("tokenizer.ggml.tokens is empty");
    if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
        throw FormatError("tokenizer.ggml.tokens has too many entries (" + std::to_string(n) + ")");
    if (token_types.size() != n)
        throw FormatError("tokenizer.ggml.token_type has " + std::to_string(token_types.size()) +
                          " entries but tokenizer.ggml.tokens has " + std::to_string(n));

    types_.resize(n);
    pieces_.resize(n);
    std::unordered_map<std::string_view, int32_t> text_ids;
    text_ids.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) {
        const int32_t t = token_types[i];
        const std::string where = "tokenizer.ggml.token_type[" + std::to_string(i) + "] = " + std::to_string(t);
        if (t < 1 || t > 6) throw FormatError(where + " is not a token type (1..6)");
        if (t == static_cast<int32_t>(TokenType::Byte))
            throw UnsupportedError(where + ": byte tokens belong to SentencePiece vocabularies, not byte-level BPE");
        types_[i] = static_cast<TokenType>(t);
        // Normal tokens are spelled in the byte-level alphabet; a string outside
        // it stands for its own UTF-8 bytes, as HF's ByteLevel decoder treats it.
        if (types_[i] != TokenType::Normal || !tok::byte_level_decode(texts_[i], &pieces_[i])) pieces_[i] = texts_[i];
        text_ids.emplace(texts_[i], static_cast<int32_t>(i));
    }

    for (int b = 0; b < 256; ++b) {
        auto it = text_ids.find(tok::byte_level_char(static_cast<uint8_t>(b)));
        if (it == text_ids.end()) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", b);
            throw FormatError(std::string("tokenizer.ggml.tokens lacks the byte-level token ") +
                              quoted(tok::byte_level_char(static_cast<uint8_t>(b))) + " for byte " + hex);
        }
        byte_ids_[b] = it->second;
    }

    merges_.reserve(merges.size());
    std::string joined;
    for (size_t r = 0; r < merges.size(); ++r) {
        const std::string& line = merges[r];
        const std::string where = "tokenizer.ggml.merges[" + std::to_string(r) + "] = " + quoted(line);
        size_t sp = line.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != std::string::npos)
            throw FormatError(where + ": expected two tokens separated by one space");
        std::string_view left(line.data(), sp), right(line.data() + sp + 1, line.size() - sp - 1);
        joined.assign(left).append(right);
        auto l = text_ids.find(left), rt = text_ids.find(right);
        auto m = text_ids.find(joined);
        if (l == text_ids.end()) throw FormatError(where + ": left token " + quoted(left) + " is not in tokenizer.ggml.tokens");
        if (rt == text_ids.end()) throw FormatError(where + ": right token " + quoted(right) + " is not in tokenizer.ggml.tokens");
        if (m == text_ids.end()) throw FormatError(where + ": merged token " + quoted(joined) + " is not in tokenizer.ggml.tokens");
        // A repeated pair keeps its first (best) rank.
        merges_.insert(l->second, rt->second, static_cast<uint32_t>(r), m->second);
    }

    for (size_t i = 0; i < n; ++i) {
        if (types_[i] != TokenType::Control && types_[i] != TokenType::UserDefined) continue;
        if (texts_[i].empty())
            throw FormatError("tokenizer.ggml.tokens[" + std::to_string(i) + "] is an empty " +
                              (types_[i] == TokenType::Control ? "control" : "user-defined") + " token");
        specials_.add(texts_[i], static_cast<int32_t>(i), types_[i] == TokenType::Control);
        special_ids_.emplace(texts_[i], static_cast<int32_t>(i));
    }
    piece_ids_.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) piece_ids_.emplace(pieces_[i], static_cast<int32_t>(i));

    for (auto [key, id] : {std::pair<const char*, int32_t>{"tokenizer.ggml.bos_token_id", bos_id_},
                           std::pair<const char*, int32_t>{"tokenizer.ggml.eos_token_id", eos_id_}}) {
        if (id < -1 || id >= static_cast<int32_t>(n))
            throw FormatError(std::string(key) + " = " + std::to_string(id) + " is out of range for " +
                              std::to_string(n) + " tokens");
    }
}

void Tokenizer::encode_text(const unsigned char* s, size_t n, bool use_cache, std::vector<int32_t>& out) const {
    // Scratch lives per thread so repeated calls reuse its buffers.
    thread_local EncodeScratch sc;
    if (n == 0) return;
    sc.pieces.clear();
    tok::pretokenize_joyai(s, n, sc.pre, sc.pieces);
    for (const tok::Piece& pc : sc.pieces) {
        const unsigned char* p = s + pc.begin;
        const size_t len = pc.end - pc.begin;
        if (len == 1) {
            out.push_back(byte_ids_[p[0]]);
            continue;
        }
        if (!use_cache || len > tok::WordCache::kMaxKeyBytes) {
            tok::bpe_encode_piece(p, len, byte_ids_, merges_, sc.bpe, out);
            continue;
        }
        const uint64_t h = tok::WordCache::hash(p, len);
        if (cache_.lookup(p, len, h, out)) continue;
        const size_t before = out.size();
        tok::bpe_encode_piece(p, len, byte_ids_, merges_, sc.bpe, out);
        cache_.insert(p, len, h, out.data() + before, out.size() - before);
    }
    // Keep the per-thread buffers small after an unusually long stretch of text.
    constexpr size_t kKeep = size_t{1} << 20;
    if (sc.pre.cp.capacity() > kKeep) sc.pre = tok::PreTokenScratch{};
    if (sc.pieces.capacity() > kKeep) std::vector<tok::Piece>().swap(sc.pieces);
    if (sc.bpe.symbols.capacity() > kKeep) sc.bpe = tok::BpeScratch{};
}

void Tokenizer::encode_append(std::string_view text, bool parse_special, std::vector<int32_t>& out) const {
    if (text.size() > std::numeric_limits<uint32_t>::max())
        throw ArgumentError("encode: text of " + std::to_string(text.size()) + " bytes exceeds the 4 GiB limit");
    std::unique_lock<std::mutex> lock(cache_mutex_, std::try_to_lock);
    const bool use_cache = lock.owns_lock();
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t seg = 0;
    if (!specials_.empty()) {
        for (size_t i = 0; i < n;) {
            int32_t id;
            size_t len = specials_.may_start(s[i]) ? specials_.match_at(s + i, n - i, parse_special, &id) : 0;
            if (len == 0) {
                ++i;
                continue;
            }
            encode_text(s + seg, i - seg, use_cache, out);
            out.push_back(id);
            i += len;
            seg = i;
        }
    }
    encode_text(s + seg, n - seg, use_cache, out);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    encode_append(text, parse_special, out);
    return out;
}

void Tokenizer::check_id(int32_t id, const char* what) const {
    if (id < 0 || id >= vocab_size())
        throw ArgumentError(std::string(what) + ": token id " + std::to_string(id) + " is out of range [0, " +
                            std::to_string(vocab_size()) + ")");
}

std::string Tokenizer::decode(const int32_t* ids, size_t n) const {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= vocab_size())
            throw ArgumentError("decode: token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                " is out of range [0, " + std::to_string(vocab_size()) + ")");
        total += pieces_[ids[i]].size();
    }
    std::string out;
    out.reserve(total);
    for (size_t i = 0; i < n; ++i) out += pieces_[ids[i]];
    return out;
}

const std::string& Tokenizer::token_to_piece(int32_t id) const {
    check_id(id, "token_to_piece");
    return pieces_[id];
}

std::optional<int32_t> Tokenizer::piece_to_id(std::string_view piece) const {
    auto it = piece_ids_.find(piece);
    if (it == piece_ids_.end()) return std::nullopt;
    return it->second;
}

const std::string& Tokenizer::token_text(int32_t id) const {
    check_id(id, "token_text");
    return texts_[id];
}

TokenType Tokenizer::token_type(int32_t id) const {
    check_id(id, "token_type");
    return types_[id];
}

std::optional<int32_t> Tokenizer::find_special(std::string_view text) const {
    auto it = special_ids_.find(text);
    if (it == special_ids_.end()) return std::nullopt;
    return it->second;
}

std::vector<std::pair<std::string, int32_t>> Tokenizer::special_tokens() const {
    std::vector<std::pair<std::string, int32_t>> out;
    for (size_t i = 0; i < texts_.size(); ++i)
        if (types_[i] == TokenType::Control || types_[i] == TokenType::UserDefined)
            out.emplace_back(texts_[i], static_cast<int32_t>(i));
    return out;
}

std::vector<std::string> Tokenizer::pre_tokenize(std::string_view text) const {
    tok::PreTokenScratch sc;
    std::vector<tok::Piece> pieces;
    tok::pretokenize_joyai(reinterpret_cast<const unsigned char*>(text.data()), text.size(), sc, pieces);
    std::vector<std::string> out;
    out.reserve(pieces.size());
    for (const tok::Piece& p : pieces) out.emplace_back(text.substr(p.begin, p.end - p.begin));
    return out;
}

const char* Tokenizer::unicode_version() { return tok::unicode_version(); }

}  // namespace ds4
