#include "tokenizer/bpe.h"

#include <algorithm>

namespace ds4::tok {

void MergeTable::reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    keys_.assign(cap, kEmpty);
    vals_.assign(cap, Entry{0, 0});
    count_ = 0;
}

bool MergeTable::insert(int32_t left, int32_t right, uint32_t rank, int32_t merged) {
    if ((count_ + 1) * 2 > keys_.size()) {
        // Grow and rehash (only while building).
        std::vector<uint64_t> old_keys = std::move(keys_);
        std::vector<Entry> old_vals = std::move(vals_);
        reserve(std::max<size_t>(16, old_keys.size()));
        for (size_t i = 0; i < old_keys.size(); ++i) {
            if (old_keys[i] == kEmpty) continue;
            size_t mask = keys_.size() - 1;
            size_t j = mix(old_keys[i]) & mask;
            while (keys_[j] != kEmpty) j = (j + 1) & mask;
            keys_[j] = old_keys[i];
            vals_[j] = old_vals[i];
            ++count_;
        }
    }
    uint64_t key = pack(left, right);
    size_t mask = keys_.size() - 1;
    size_t i = mix(key) & mask;
    for (; keys_[i] != kEmpty; i = (i + 1) & mask)
        if (keys_[i] == key) return false;
    keys_[i] = key;
    vals_[i] = Entry{rank, merged};
    ++count_;
    return true;
}

namespace {

// Min-heap order on (rank, position).
struct Later {
    bool operator()(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) const {
        return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
    }
};

}  // namespace

void bpe_encode_piece(const unsigned char* s, size_t n, const int32_t byte_ids[256], const MergeTable& merges,
                      BpeScratch& sc, std::vector<int32_t>& out) {
    if (n == 1) {
        out.push_back(byte_ids[s[0]]);
        return;
    }
    auto& sym = sc.symbols;
    auto& heap = sc.heap;
    sym.resize(n);
    heap.clear();
    for (size_t i = 0; i < n; ++i)
        sym[i] = BpeScratch::Symbol{byte_ids[s[i]], static_cast<int32_t>(i) - 1,
                                    i + 1 < n ? static_cast<int32_t>(i + 1) : -1};
    auto push_pair = [&](int32_t pos) {
        int32_t nx = sym[pos].next;
        if (nx < 0) return;
        if (const MergeTable::Entry* e = merges.find(sym[pos].id, sym[nx].id)) {
            heap.push_back(BpeScratch::Candidate{e->rank, static_cast<uint32_t>(pos), e->merged});
            std::push_heap(heap.begin(), heap.end(), Later{});
        }
    };
    for (size_t i = 0; i + 1 < n; ++i) push_pair(static_cast<int32_t>(i));

    // A removed symbol gets id -1; queue entries whose pair changed since they
    // were queued are stale and skipped (their merged id no longer matches).
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), Later{});
        BpeScratch::Candidate top = heap.back();
        heap.pop_back();
        int32_t pos = static_cast<int32_t>(top.pos);
        if (sym[pos].id < 0) continue;
        int32_t nx = sym[pos].next;
        if (nx < 0) continue;
        const MergeTable::Entry* e = merges.find(sym[pos].id, sym[nx].id);
        if (e == nullptr || e->merged != top.merged) continue;
        sym[pos].id = top.merged;
        sym[pos].next = sym[nx].next;
        if (sym[nx].next >= 0) sym[sym[nx].next].prev = pos;
        sym[nx].id = -1;
        if (sym[pos].prev >= 0) push_pair(sym[pos].prev);
        push_pair(pos);
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

}  // namespace ds4::tok
