// Cache of BPE results per pre-tokenized piece. Text repeats words constantly,
// so most pieces are answered here without running the merge loop.
// Not thread-safe by itself: the Tokenizer guards it (see tokenizer.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ds4::tok {

class WordCache {
public:
    static constexpr size_t kMaxKeyBytes = 64;   // longer pieces are rare; not cached
    static constexpr size_t kMaxEntries = 1u << 17;  // cleared when full (bounded memory)

    static uint64_t hash(const unsigned char* s, size_t n);

    // Appends the cached ids of s[0..n) to out and returns true, or returns false.
    bool lookup(const unsigned char* s, size_t n, uint64_t h, std::vector<int32_t>& out) const;
    void insert(const unsigned char* s, size_t n, uint64_t h, const int32_t* ids, size_t count);
    size_t size() const { return used_; }

private:
    struct Slot {
        uint64_t hash;
        uint32_t key_off;
        uint32_t key_len;  // 0 marks an empty slot
        uint32_t val_off;
        uint32_t val_len;
    };
    void clear();
    std::vector<Slot> slots_;
    std::string keys_;
    std::vector<int32_t> vals_;
    size_t used_ = 0;
};

}  // namespace ds4::tok
