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

    // Drops this process's pages of the mapping (madvise MADV_DONTNEED): a backend that holds
    // its own copy of the weights (a GPU; on a unified-memory APU the same RAM) then leaves
    // only reclaimable page cache behind. Safe at any time: a later read faults the page back
    // in from the file. No-op for from_bytes buffers.
    void release_pages() const;
    // Bytes of the mapping in this process's resident set now (the mapping's Rss in
    // /proc/self/smaps: pages this process has mapped, not the page cache); for from_bytes
    // buffers, their size. UnsupportedError where there is no smaps (not Linux).
    uint64_t resident_bytes() const;

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
