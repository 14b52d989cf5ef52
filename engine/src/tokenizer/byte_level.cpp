#include "tokenizer/byte_level.h"

#include "tokenizer/unicode_classes.h"

namespace ds4::tok {

namespace {

struct Alphabet {
    uint32_t to_cp[256];
    int16_t from_cp[324];  // the alphabet lies within U+0000..U+0143
    Alphabet() {
        for (int16_t& v : from_cp) v = -1;
        // Printable Latin-1 bytes stand for themselves; the other 68 bytes are
        // shifted, in byte order, to U+0100 and up.
        uint32_t next = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            to_cp[b] = printable ? b : next++;
            from_cp[to_cp[b]] = static_cast<int16_t>(b);
        }
    }
};

const Alphabet& alphabet() {
    static const Alphabet a;
    return a;
}

void append_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
        out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        // The alphabet never goes beyond U+0143, so two bytes always suffice.
        out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t b) { return alphabet().to_cp[b]; }

std::string byte_level_char(uint8_t b) {
    std::string s;
    append_utf8(byte_to_codepoint(b), &s);
    return s;
}

bool byte_level_decode(std::string_view text, std::string* out) {
    const Alphabet& a = alphabet();
    out->clear();
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    size_t i = 0, n = text.size();
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_decode(s + i, n - i, &cp);
        if (len == 0 || cp >= 324 || a.from_cp[cp] < 0) return false;
        out->push_back(static_cast<char>(a.from_cp[cp]));
        i += len;
    }
    return true;
}

}  // namespace ds4::tok
