#include "tokenizer/word_cache.h"

#include <cstring>

namespace ds4::tok {

uint64_t WordCache::hash(const unsigned char* s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full);
    while (n >= 8) {
        uint64_t v;
        std::memcpy(&v, s, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t v = 0;
    std::memcpy(&v, s, n);
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h;
}

bool WordCache::lookup(const unsigned char* s, size_t n, uint64_t h, std::vector<int32_t>& out) const {
    if (slots_.empty()) return false;
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const Slot& slot = slots_[i];
        if (slot.key_len == 0) return false;
        if (slot.hash == h && slot.key_len == n && std::memcmp(keys_.data() + slot.key_off, s, n) == 0) {
            out.insert(out.end(), vals_.begin() + slot.val_off, vals_.begin() + slot.val_off + slot.val_len);
            return true;
        }
    }
}

void WordCache::clear() {
    slots_.assign(kMaxEntries * 2, Slot{0, 0, 0, 0, 0});
    keys_.clear();
    vals_.clear();
    used_ = 0;
}

void WordCache::insert(const unsigned char* s, size_t n, uint64_t h, const int32_t* ids, size_t count) {
    if (n == 0 || n > kMaxKeyBytes) return;
    if (slots_.empty() || used_ >= kMaxEntries) clear();
    size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    while (slots_[i].key_len != 0) i = (i + 1) & mask;
    slots_[i] = Slot{h, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(n),
                     static_cast<uint32_t>(vals_.size()), static_cast<uint32_t>(count)};
    keys_.append(reinterpret_cast<const char*>(s), n);
    vals_.insert(vals_.end(), ids, ids + count);
    ++used_;
}

}  // namespace ds4::tok
