// The tokenizer a GGUF describes (`tokenizer.ggml.*`), built straight from the
// file's metadata: the vocabulary never round-trips through Python.
#pragma once
#include <memory>

#include "tokenizer/tokenizer.h"

namespace ds4 {

class GGUFFile;

// Throws FormatError naming the file and the missing or mistyped key, and
// UnsupportedError for a tokenizer model other than byte-level BPE ("gpt2").
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GGUFFile& f);

}  // namespace ds4
