// Read-only bytes of a GGUF file: either a memory mapping of a file (the normal
// case, so a 100 GB model is never copied) or an owned copy of a buffer (fuzz
// drivers, where an exact-size heap block lets AddressSanitizer catch any read
// one byte past the end). Shared through std::shared_ptr so that zero-copy
// views (numpy arrays in Python) keep the bytes alive after the GGUFFile dies.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ds4 {

class MappedFile {
public:
    // Maps `path` read-only. Throws ArgumentError if it cannot be opened or is
    // not a regular file. An empty file gives size() == 0 and data() == nullptr.
    static std::shared_ptr<const MappedFile> open(const std::string& path);

    // Copies `size` bytes into an owned buffer; `label` stands in for the path in messages.
    static std::shared_ptr<const MappedFile> from_bytes(const void* bytes, size_t size,
                                                        const std::string& label);

    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    MappedFile() = default;
    std::string path_;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    void* map_base_ = nullptr;      // non-null when the bytes come from mmap
    size_t map_length_ = 0;
    std::unique_ptr<uint8_t[]> owned_;  // from_bytes: exactly `size` bytes, so ASan sees overruns
};

}  // namespace ds4
