// Byte-level BPE: ranked merges applied to one pre-tokenized piece.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ds4::tok {

// (left id, right id) -> (rank, merged id), open addressing, no per-lookup allocation.
class MergeTable {
public:
    struct Entry {
        uint32_t rank;
        int32_t merged;
    };
    void reserve(size_t n);
    // Returns false if the pair is already present (the first, lower rank, is kept).
    bool insert(int32_t left, int32_t right, uint32_t rank, int32_t merged);
    const Entry* find(int32_t left, int32_t right) const {
        if (keys_.empty()) return nullptr;
        uint64_t key = pack(left, right);
        size_t mask = keys_.size() - 1;
        for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
            if (keys_[i] == key) return &vals_[i];
            if (keys_[i] == kEmpty) return nullptr;
        }
    }
    size_t size() const { return count_; }

private:
    static constexpr uint64_t kEmpty = ~0ull;
    static uint64_t pack(int32_t a, int32_t b) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    }
    static size_t mix(uint64_t k) {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdull;
        k ^= k >> 33;
        return static_cast<size_t>(k);
    }
    std::vector<uint64_t> keys_;
    std::vector<Entry> vals_;
    size_t count_ = 0;
};

struct BpeScratch {
    struct Symbol {
        int32_t id;
        int32_t prev;
        int32_t next;
    };
    struct Candidate {
        uint32_t rank;
        uint32_t pos;
        int32_t merged;
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
};

// Appends the ids of piece s[0..n) to out. byte_ids maps each byte to its
// single-byte token. Repeatedly merges the adjacent pair of lowest rank (the
// leftmost among equals), which is exactly what HF tokenizers' BPE does.
void bpe_encode_piece(const unsigned char* s, size_t n, const int32_t byte_ids[256], const MergeTable& merges,
                      BpeScratch& scratch, std::vector<int32_t>& out);

}  // namespace ds4::tok
