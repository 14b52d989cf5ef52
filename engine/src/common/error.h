// Engine error types. Every failure on bad input is one of these, carrying a
// message that names the file, key, tensor or argument at fault. The bindings
// translate them into Python exceptions; nothing in the engine calls abort().
#pragma once
#include <stdexcept>
#include <string>

namespace ds4 {

// Base class of every engine error.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A file (GGUF, snapshot, ...) is malformed, truncated or hostile.
struct FormatError : Error {
    using Error::Error;
};

// A caller passed an invalid argument (bad token id, shape mismatch, ...).
struct ArgumentError : Error {
    using Error::Error;
};

// The file is well formed but uses something we do not support (quant type, version).
struct UnsupportedError : Error {
    using Error::Error;
};

}  // namespace ds4
