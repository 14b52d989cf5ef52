#include "tokenizer/tokenizer_gguf.h"

#include <string>
#include <vector>

#include "common/error.h"
#include "gguf/gguf_file.h"

namespace ds4 {

namespace {

void require(const GGUFFile& f, const std::string& key) {
    if (!f.has(key)) throw FormatError(f.path() + ": GGUF metadata lacks '" + key + "'; cannot build the tokenizer");
}

int32_t optional_id(const GGUFFile& f, const std::string& key) { return f.has(key) ? (int32_t)f.get_i64(key) : -1; }

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GGUFFile& f) {
    for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type",
                            "tokenizer.ggml.pre"}) {
        require(f, key);
    }
    if (f.has("tokenizer.ggml.model") && f.get_string("tokenizer.ggml.model") != "gpt2") {
        throw UnsupportedError(f.path() + ": tokenizer.ggml.model is '" + f.get_string("tokenizer.ggml.model") +
                               "'; only byte-level BPE ('gpt2') is supported");
    }
    return std::make_unique<Tokenizer>(f.get_string_array("tokenizer.ggml.tokens"),
                                       f.get_string_array("tokenizer.ggml.merges"),
                                       f.get_i32_array("tokenizer.ggml.token_type"), f.get_string("tokenizer.ggml.pre"),
                                       optional_id(f, "tokenizer.ggml.bos_token_id"),
                                       optional_id(f, "tokenizer.ggml.eos_token_id"));
}

}  // namespace ds4
