#include "tokenizer/pretokenizer.h"

#include "tokenizer/unicode_classes.h"

namespace ds4::tok {

namespace {

inline bool is_ascii_punct(uint32_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}
inline bool is_ascii_alpha(uint32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
inline bool is_crlf(uint32_t c) { return c == '\r' || c == '\n'; }

// Splits one code-point stretch [0, m) that is already valid UTF-8.
class ValidSplitter {
public:
    ValidSplitter(const PreTokenScratch& s, std::vector<Piece>& out)
        : cp_(s.cp.data()), off_(s.off.data()), cls_(s.cls.data()), out_(out) {}

    void run(size_t m) {
        size_t k = 0;
        while (k < m) {
            size_t r = k;
            if (cls_[k] == kN) {
                // Split 1: runs of \p{N}, cut greedily into groups of at most three.
                while (r < m && cls_[r] == kN) ++r;
                for (size_t g = k; g < r; g += 3) emit(g, g + 3 < r ? g + 3 : r);
            } else if (is_cjk_split_char(cp_[k])) {
                // Split 2 isolates CJK/kana runs; split 3 still applies inside them
                // (they hold letters, marks and a few P/S characters such as ・).
                while (r < m && is_cjk_split_char(cp_[r])) ++r;
                split3(k, r);
            } else {
                // No \p{N} lies in the CJK set, so splits 1 and 2 commute here.
                while (r < m && cls_[r] != kN && !is_cjk_split_char(cp_[r])) ++r;
                split3(k, r);
            }
            k = r;
        }
    }

private:
    void emit(size_t a, size_t b) { out_.push_back(Piece{off_[a], off_[b]}); }

    size_t run_of(size_t p, size_t r, CharClass c) const {
        while (p < r && cls_[p] == c) ++p;
        return p;
    }

    // Length in code points of regex 3's match starting at p within [p, r), or 0.
    // Alternatives are tried in order, exactly as a backtracking engine does.
    size_t match3(size_t p, size_t r) const {
        const uint32_t c0 = cp_[p];
        const CharClass k0 = static_cast<CharClass>(cls_[p]);
        const bool has1 = p + 1 < r;
        // [ascii punct][A-Za-z]+
        if (is_ascii_punct(c0) && has1 && is_ascii_alpha(cp_[p + 1])) {
            size_t q = p + 1;
            while (q < r && is_ascii_alpha(cp_[q])) ++q;
            return q - p;
        }
        // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ : a mark may serve as the optional
        // prefix, but it would also match the body, so L and M behave alike.
        if (k0 == kLM) return run_of(p, r, kLM) - p;
        if (k0 != kPS && !is_crlf(c0) && has1 && cls_[p + 1] == kLM) return run_of(p + 1, r, kLM) - p;
        // ' '?[\p{P}\p{S}]+[\r\n]*
        size_t ps = (c0 == ' ' && has1 && cls_[p + 1] == kPS) ? p + 1 : (k0 == kPS ? p : r);
        if (ps < r) {
            size_t q = run_of(ps, r, kPS);
            while (q < r && is_crlf(cp_[q])) ++q;
            return q - p;
        }
        if (k0 != kWS) return 0;
        size_t q = p;
        size_t last_nl = r;
        for (; q < r && cls_[q] == kWS; ++q)
            if (is_crlf(cp_[q])) last_nl = q;
        // \s*[\r\n]+ : backtracks to the last CR/LF of the whitespace run.
        if (last_nl < r) return last_nl + 1 - p;
        size_t w = q - p;
        // \s+(?!\S) : the whole run at the piece's end, else all but its last char.
        if (q == r) return w;
        if (w >= 2) return w - 1;
        // \s+
        return w;
    }

    void split3(size_t k, size_t r) {
        size_t p = k, gap = k;
        while (p < r) {
            size_t len = match3(p, r);
            if (len == 0) {
                ++p;
                continue;
            }
            if (gap < p) emit(gap, p);
            emit(p, p + len);
            p += len;
            gap = p;
        }
        if (gap < r) emit(gap, r);
    }

    const uint32_t* cp_;
    const uint32_t* off_;
    const uint8_t* cls_;
    std::vector<Piece>& out_;
};

}  // namespace

void pretokenize_joyai(const unsigned char* s, size_t n, PreTokenScratch& sc, std::vector<Piece>& out) {
    size_t i = 0;
    while (i < n) {
        sc.cp.clear();
        sc.off.clear();
        sc.cls.clear();
        while (i < n) {
            uint32_t cp;
            size_t len = utf8_decode(s + i, n - i, &cp);
            if (len == 0) break;
            sc.cp.push_back(cp);
            sc.off.push_back(static_cast<uint32_t>(i));
            sc.cls.push_back(static_cast<uint8_t>(char_class(cp)));
            i += len;
        }
        sc.off.push_back(static_cast<uint32_t>(i));
        if (!sc.cp.empty()) ValidSplitter(sc, out).run(sc.cp.size());
        if (i < n) {
            out.push_back(Piece{static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1)});
            ++i;
        }
    }
}

}  // namespace ds4::tok
