#include "tokenizer/special_matcher.h"

namespace ds4::tok {

SpecialMatcher::SpecialMatcher() : nodes_(1) {
    for (bool& b : first_byte_) b = false;
}

int32_t SpecialMatcher::child(int32_t node, unsigned char c) const {
    for (const auto& e : nodes_[node].next)
        if (e.first == c) return e.second;
    return -1;
}

bool SpecialMatcher::add(std::string_view text, int32_t id, bool control) {
    int32_t node = 0;
    for (unsigned char c : text) {
        int32_t nx = child(node, c);
        if (nx < 0) {
            nx = static_cast<int32_t>(nodes_.size());
            nodes_[node].next.emplace_back(c, nx);
            nodes_.emplace_back();
        }
        node = nx;
    }
    if (nodes_[node].id >= 0) return false;
    nodes_[node].id = id;
    nodes_[node].control = control;
    first_byte_[static_cast<unsigned char>(text[0])] = true;
    ++count_;
    return true;
}

size_t SpecialMatcher::match_at(const unsigned char* s, size_t n, bool include_control, int32_t* id) const {
    size_t best = 0;
    int32_t node = 0;
    for (size_t i = 0; i < n; ++i) {
        node = child(node, s[i]);
        if (node < 0) break;
        const Node& nd = nodes_[node];
        if (nd.id >= 0 && (include_control || !nd.control)) {
            best = i + 1;
            *id = nd.id;
        }
    }
    return best;
}

}  // namespace ds4::tok
