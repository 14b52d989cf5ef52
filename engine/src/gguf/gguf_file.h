// GGUF reader (versions 2 and 3): read-only mmap, every metadata value type,
// tensor table. Every check a hostile file could trip is done at open time, so
// after construction every tensor's bytes are known to lie inside the file, in
// order, without overlap. Errors are ds4::FormatError (malformed file),
// ds4::UnsupportedError (well-formed but unsupported: version, tensor type) or
// ds4::ArgumentError (cannot open the path; tensor(name) for a name that is not
// there), each naming the file and the key or tensor. Typed getters throw
// FormatError for a missing key or a stored type that does not fit: the file
// lacks what the caller needs (use find() for optional keys).
//
// Decisions on input the spec leaves open (all errors, never silent repair):
// - keys, tensor names and string values must be strict UTF-8 (gguf-py decodes
//   strictly too); invalid bytes raise FormatError naming the key (and array index)
//   or tensor, so every string handed out converts to a Python str;
// - BOOL bytes must be 0 or 1;
// - arrays nest at most kMaxArrayDepth levels, and at most 2^24 nested-array
//   elements per file (each costs ~100 bytes of RAM against 12 on disk);
// - general.alignment must be an unsigned integer (UINT8/16/32), non-zero power of two;
// - tensor type ids outside the quant type table raise UnsupportedError;
// - with no tensors, data_offset may lie past the end of the file (nothing is read there).
// The host must be little-endian; big-endian GGUF files are rejected as unsupported.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <map>
#include <utility>
#include <vector>

#include "gguf/gguf_value.h"
#include "gguf/mapped_file.h"

namespace ds4 {

struct GGUFTensorInfo {
    std::string name;
    uint32_t type_id = 0;
    std::string type_name;         // from the quant type table
    std::vector<uint64_t> ne;      // 1..4 dims, ggml order (ne[0] innermost)
    uint64_t n_elements = 0;
    uint64_t offset = 0;           // relative to the data section
    uint64_t abs_offset = 0;       // from the start of the file
    uint64_t nbytes = 0;
    const uint8_t* data = nullptr; // into the mapping; valid while bytes() is alive
};

struct GGUFKV {
    std::string key;
    GGUFValue value;
};

class GGUFFile {
public:
    static constexpr uint32_t kDefaultAlignment = 32;
    static constexpr uint32_t kMaxDims = 4;
    static constexpr int kMaxArrayDepth = 8;  // nested arrays deeper than this are rejected

    // Opens and validates `path`.
    explicit GGUFFile(const std::string& path);
    // Validates bytes that are already loaded (fuzz drivers use MappedFile::from_bytes).
    explicit GGUFFile(std::shared_ptr<const MappedFile> bytes);

    GGUFFile(GGUFFile&&) noexcept = default;
    GGUFFile& operator=(GGUFFile&&) noexcept = default;
    GGUFFile(const GGUFFile&) = delete;
    GGUFFile& operator=(const GGUFFile&) = delete;

    const std::string& path() const { return bytes_->path(); }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }
    uint64_t file_size() const { return bytes_->size(); }
    // The bytes; hold this shared_ptr to keep tensor data pointers valid.
    const std::shared_ptr<const MappedFile>& bytes() const { return bytes_; }

    // Metadata in file order.
    const std::vector<GGUFKV>& metadata() const { return kvs_; }
    const GGUFValue* find(const std::string& key) const;  // nullptr if absent
    bool has(const std::string& key) const { return find(key) != nullptr; }
    const GGUFValue& get(const std::string& key) const;   // FormatError if absent

    // Typed getters. Integers widen only where every value of the stored type
    // fits (get_u32 takes UINT8/16/32, get_i64 takes INT8..64 and UINT8..32, ...);
    // get_f64 also takes FLOAT32. Errors name the key, the expected and actual type.
    uint32_t get_u32(const std::string& key) const;
    uint64_t get_u64(const std::string& key) const;
    int32_t get_i32(const std::string& key) const;
    int64_t get_i64(const std::string& key) const;
    float get_f32(const std::string& key) const;
    double get_f64(const std::string& key) const;
    bool get_bool(const std::string& key) const;
    const std::string& get_string(const std::string& key) const;
    std::vector<uint32_t> get_u32_array(const std::string& key) const;
    std::vector<int32_t> get_i32_array(const std::string& key) const;
    std::vector<int64_t> get_i64_array(const std::string& key) const;
    std::vector<float> get_f32_array(const std::string& key) const;
    std::vector<std::string> get_string_array(const std::string& key) const;

    // Tensors in file order.
    const std::vector<GGUFTensorInfo>& tensors() const { return tensors_; }
    size_t n_tensors() const { return tensors_.size(); }
    const GGUFTensorInfo* find_tensor(const std::string& name) const;  // nullptr if absent
    const GGUFTensorInfo& tensor(const std::string& name) const;       // ArgumentError if absent

private:
    void parse();

    std::shared_ptr<const MappedFile> bytes_;
    uint32_t version_ = 0;
    uint32_t alignment_ = kDefaultAlignment;
    uint64_t data_offset_ = 0;
    std::vector<GGUFKV> kvs_;
    std::map<std::string, size_t> kv_index_;  // ordered map: no hash-collision worst case
    std::vector<GGUFTensorInfo> tensors_;
    std::map<std::string, size_t> tensor_index_;
};

// Quotes a key or tensor name for an error message: valid UTF-8 kept, control
// characters and invalid bytes as \xNN, cut to 120 bytes, so a message is
// always valid UTF-8 (Python must be able to decode it).
std::string gguf_quote(const std::string& name);

}  // namespace ds4
