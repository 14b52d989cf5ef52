#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/error.h"
#include "gguf/gguf_utf8.h"
#include "quant/quant_types.h"

namespace ds4 {

namespace {

// Smallest encodings, used to reject a count before anything is allocated for it:
// a KV is key length (8) + type (4) + at least one value byte; a tensor info is
// name length (8) + n_dims (4) + one dim (8) + type (4) + offset (8).
constexpr uint64_t kMinKVBytes = 13;
constexpr uint64_t kMinTensorInfoBytes = 32;
// Decoded elements of nested arrays across the whole file. Each costs far more
// memory than its 12 bytes on disk, so a hostile file could otherwise turn a few
// GB of headers into tens of GB of RAM; real files have next to none.
constexpr uint64_t kMaxNestedItems = uint64_t(1) << 24;
// Counts checked against the bytes left can still be large for a 100 GB model
// file; containers reserve at most this many up front and grow as entries parse.
constexpr uint64_t kMaxReserve = uint64_t(1) << 16;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the GGUF reader assumes a little-endian host");

// Thrown by Cursor when a read runs past the end; the parser turns it into a
// FormatError that names what it was reading.
struct Truncated {
    uint64_t need;
    uint64_t at;
};

// Bounds-checked little-endian reader over the file bytes.
class Cursor {
public:
    Cursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}
    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }

    const uint8_t* take(uint64_t n) {
        if (n > remaining()) throw Truncated{n, pos_};
        const uint8_t* p = base_ + pos_;
        pos_ += n;
        return p;
    }
    template <class T>
    T read() {
        T x;
        std::memcpy(&x, take(sizeof(T)), sizeof(T));
        return x;
    }
    // A GGUF string: u64 byte length, then the bytes (no terminator).
    std::string_view read_string_view() {
        const uint64_t n = read<uint64_t>();
        if (n > remaining()) throw Truncated{n, pos_};
        return std::string_view(reinterpret_cast<const char*>(take(n)), static_cast<size_t>(n));
    }

private:
    const uint8_t* base_;
    uint64_t size_;
    uint64_t pos_ = 0;
};

bool valid_utf8(std::string_view s) {
    return utf8_valid(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string truncation_detail(const Truncated& t, uint64_t file_size) {
    return "file is truncated (needed " + std::to_string(t.need) + " bytes at offset " +
           std::to_string(t.at) + ", file has " + std::to_string(file_size) + ")";
}

// Reads metadata values; knows the file and key so every message can name them.
class ValueReader {
public:
    ValueReader(Cursor& cur, const std::string& path, const std::string& key, uint64_t& nested_items)
        : cur_(cur), path_(path), key_(key), nested_items_(nested_items) {}

    GGUFValue read(uint32_t type_id, int depth) {
        if (!gguf_type_valid(type_id)) fail("unknown value type id " + std::to_string(type_id));
        GGUFValue v;
        v.type = static_cast<GGUFType>(type_id);
        switch (v.type) {
            case GGUFType::STRING: {
                const std::string_view s = cur_.read_string_view();
                if (!valid_utf8(s)) fail("string is not valid UTF-8");
                v.str.assign(s.data(), s.size());
                break;
            }
            case GGUFType::ARRAY: read_array(v, depth); break;
            default: {
                // Decode through a one-element array view so scalar and array paths share code.
                GGUFValue one;
                one.elem_type = v.type;
                one.raw = cur_.take(gguf_scalar_size(v.type));
                if (v.type == GGUFType::BOOL) check_bool(one.raw[0]);
                v = one.scalar_at(0);
                break;
            }
        }
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        std::string where = "metadata key " + gguf_quote(key_);
        for (uint64_t k : index_) where += "[" + std::to_string(k) + "]";
        throw FormatError(path_ + ": " + where + ": " + what);
    }

    void check_bool(uint8_t b) const {
        if (b > 1) fail("bool value " + std::to_string(b) + " is neither 0 nor 1");
    }

    void read_array(GGUFValue& v, int depth) {
        const uint32_t elem = cur_.read<uint32_t>();
        if (!gguf_type_valid(elem)) fail("array has unknown element type id " + std::to_string(elem));
        v.elem_type = static_cast<GGUFType>(elem);
        v.count = cur_.read<uint64_t>();
        if (v.elem_type == GGUFType::ARRAY && depth + 1 >= GGUFFile::kMaxArrayDepth) {
            fail("arrays nested deeper than " + std::to_string(GGUFFile::kMaxArrayDepth) + " levels");
        }
        const uint64_t scalar = gguf_scalar_size(v.elem_type);
        // STRING elements take at least their 8-byte length, ARRAY elements their 12-byte header.
        const uint64_t min_elem = scalar ? scalar : (v.elem_type == GGUFType::STRING ? 8 : 12);
        if (v.count > cur_.remaining() / min_elem) {
            fail("array length " + std::to_string(v.count) + " of " + gguf_type_name(v.elem_type) +
                 " cannot fit: each element takes at least " + std::to_string(min_elem) + " bytes and only " +
                 std::to_string(cur_.remaining()) + " remain (absurd length or truncated file)");
        }
        if (scalar) {
            v.raw = cur_.take(v.count * scalar);
            if (v.elem_type == GGUFType::BOOL) {
                for (uint64_t k = 0; k < v.count; ++k) {
                    if (v.raw[k] > 1) {
                        index_.push_back(k);
                        check_bool(v.raw[k]);
                    }
                }
            }
            return;
        }
        if (v.elem_type == GGUFType::STRING) {
            v.strs.reserve(static_cast<size_t>(std::min<uint64_t>(v.count, kMaxReserve)));
            index_.push_back(0);
            for (uint64_t k = 0; k < v.count; ++k) {
                index_.back() = k;
                const std::string_view s = cur_.read_string_view();
                if (!valid_utf8(s)) fail("string is not valid UTF-8");
                v.strs.push_back(s);
            }
            index_.pop_back();
            return;
        }
        // Arrays of arrays: each inner array carries its own element type.
        nested_items_ += v.count;
        if (nested_items_ > kMaxNestedItems) {
            fail("more than " + std::to_string(kMaxNestedItems) + " nested array elements in the file");
        }
        v.items.reserve(static_cast<size_t>(std::min<uint64_t>(v.count, kMaxReserve)));
        index_.push_back(0);
        for (uint64_t k = 0; k < v.count; ++k) {
            index_.back() = k;
            GGUFValue inner;
            inner.type = GGUFType::ARRAY;
            read_array(inner, depth + 1);
            v.items.push_back(std::move(inner));
        }
        index_.pop_back();
    }

    Cursor& cur_;
    const std::string& path_;
    const std::string& key_;
    uint64_t& nested_items_;
    std::vector<uint64_t> index_;  // array indices leading to the element being read
};

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }

std::string range_text(uint64_t begin, uint64_t end) {
    return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

}  // namespace

std::string gguf_quote(const std::string& name) {
    constexpr size_t kMax = 120;
    static const char kHex[] = "0123456789abcdef";
    std::string out = "'";
    const auto* s = reinterpret_cast<const uint8_t*>(name.data());
    size_t i = 0;
    while (i < name.size() && i < kMax) {
        const size_t len = utf8_sequence_length(s + i, name.size() - i);
        if (len > 1 || (len == 1 && s[i] >= 0x20 && s[i] != 0x7F && s[i] != '\\' && s[i] != '\'')) {
            out.append(name, i, len);
            i += len;
        } else {
            out += "\\x";
            out += kHex[s[i] >> 4];
            out += kHex[s[i] & 15];
            ++i;
        }
    }
    out += "'";
    if (i < name.size()) out += "... (" + std::to_string(name.size()) + " bytes)";
    return out;
}

GGUFFile::GGUFFile(const std::string& path) : GGUFFile(MappedFile::open(path)) {}

GGUFFile::GGUFFile(std::shared_ptr<const MappedFile> bytes) : bytes_(std::move(bytes)) {
    if (!bytes_) throw ArgumentError("GGUFFile: no bytes given");
    parse();
}

void GGUFFile::parse() {
    const std::string& p = bytes_->path();
    const uint64_t size = bytes_->size();
    auto format_error = [&p](const std::string& what) { return FormatError(p + ": " + what); };

    // --- header: magic, version, counts -----------------------------------------------
    if (size < 4) throw format_error("truncated header: file has " + std::to_string(size) + " bytes");
    Cursor cur(bytes_->data(), size);
    const uint8_t* magic = cur.take(4);
    if (std::memcmp(magic, "GGUF", 4) != 0) {
        throw format_error("bad magic " + gguf_quote(std::string(reinterpret_cast<const char*>(magic), 4)) +
                           " (expected 'GGUF'): not a GGUF file");
    }
    uint64_t n_tensors = 0, n_kv = 0;
    try {
        version_ = cur.read<uint32_t>();
        if (version_ == 1) {
            throw UnsupportedError(p + ": GGUF version 1 is not supported (only versions 2 and 3)");
        }
        if (version_ != 2 && version_ != 3) {
            const uint32_t swapped = __builtin_bswap32(version_);
            if (swapped == 2 || swapped == 3) {
                throw UnsupportedError(p + ": big-endian GGUF (version " + std::to_string(swapped) +
                                       ") is not supported");
            }
            throw UnsupportedError(p + ": unsupported GGUF version " + std::to_string(version_) +
                                   " (only versions 2 and 3)");
        }
        n_tensors = cur.read<uint64_t>();
        n_kv = cur.read<uint64_t>();
    } catch (const Truncated& t) {
        throw format_error("truncated header: " + truncation_detail(t, size));
    }
    if (n_kv > cur.remaining() / kMinKVBytes) {
        throw format_error("metadata count n_kv=" + std::to_string(n_kv) + " cannot fit: each entry takes at least " +
                           std::to_string(kMinKVBytes) + " bytes and only " + std::to_string(cur.remaining()) +
                           " remain (absurd count or truncated file)");
    }

    // --- metadata -----------------------------------------------------------------------
    uint64_t nested_items = 0;
    kvs_.reserve(static_cast<size_t>(std::min<uint64_t>(n_kv, kMaxReserve)));
    for (uint64_t k = 0; k < n_kv; ++k) {
        std::string key;
        try {
            const std::string_view kv = cur.read_string_view();
            key.assign(kv.data(), kv.size());
        } catch (const Truncated& t) {
            throw format_error("truncated in metadata key #" + std::to_string(k) + ": " + truncation_detail(t, size));
        }
        if (key.empty()) throw format_error("metadata key #" + std::to_string(k) + " is empty");
        if (!valid_utf8(key)) {
            throw format_error("metadata key #" + std::to_string(k) + " " + gguf_quote(key) + " is not valid UTF-8");
        }
        if (kv_index_.count(key)) throw format_error("duplicate metadata key " + gguf_quote(key));
        GGUFValue value;
        try {
            const uint32_t type_id = cur.read<uint32_t>();
            value = ValueReader(cur, p, key, nested_items).read(type_id, 0);
        } catch (const Truncated& t) {
            throw format_error("truncated in the value of metadata key " + gguf_quote(key) + ": " +
                               truncation_detail(t, size));
        }
        kv_index_.emplace(key, kvs_.size());
        kvs_.push_back(GGUFKV{std::move(key), std::move(value)});
    }

    // --- alignment ----------------------------------------------------------------------
    if (const GGUFValue* a = find("general.alignment")) {
        if (a->type != GGUFType::UINT32 && a->type != GGUFType::UINT16 && a->type != GGUFType::UINT8) {
            throw format_error("metadata key 'general.alignment': expected UINT32, found " + gguf_value_type_name(*a));
        }
        if (a->u == 0 || (a->u & (a->u - 1)) != 0) {
            throw format_error("metadata key 'general.alignment': " + std::to_string(a->u) +
                               " is not a non-zero power of two");
        }
        alignment_ = static_cast<uint32_t>(a->u);
    }

    // --- tensor infos -------------------------------------------------------------------
    if (n_tensors > cur.remaining() / kMinTensorInfoBytes) {
        throw format_error("tensor count n_tensors=" + std::to_string(n_tensors) + " cannot fit: each tensor info takes at least " +
                           std::to_string(kMinTensorInfoBytes) + " bytes and only " + std::to_string(cur.remaining()) +
                           " remain (absurd count or truncated file)");
    }
    tensors_.reserve(static_cast<size_t>(std::min<uint64_t>(n_tensors, kMaxReserve)));
    for (uint64_t k = 0; k < n_tensors; ++k) {
        GGUFTensorInfo t;
        std::string label = "tensor #" + std::to_string(k);
        try {
            const std::string_view nm = cur.read_string_view();
            t.name.assign(nm.data(), nm.size());
            if (!valid_utf8(t.name)) throw format_error(label + " name " + gguf_quote(t.name) + " is not valid UTF-8");
            label = "tensor " + gguf_quote(t.name);
            if (tensor_index_.count(t.name)) throw format_error("duplicate tensor name " + gguf_quote(t.name));
            const uint32_t n_dims = cur.read<uint32_t>();
            if (n_dims == 0 || n_dims > kMaxDims) {
                throw format_error(label + ": n_dims " + std::to_string(n_dims) + " (must be 1.." +
                                   std::to_string(kMaxDims) + ")");
            }
            t.ne.resize(n_dims);
            t.n_elements = 1;
            for (uint32_t d = 0; d < n_dims; ++d) {
                t.ne[d] = cur.read<uint64_t>();
                if (t.ne[d] == 0) throw format_error(label + ": dimension " + std::to_string(d) + " is 0");
                // ggml keeps dims and element counts in int64_t.
                if (mul_overflows(t.n_elements, t.ne[d], &t.n_elements) ||
                    t.n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                    throw format_error(label + ": element count overflows (dimension " + std::to_string(d) +
                                       " = " + std::to_string(t.ne[d]) + ")");
                }
            }
            t.type_id = cur.read<uint32_t>();
            t.offset = cur.read<uint64_t>();
        } catch (const Truncated& tr) {
            throw format_error("truncated in the info of " + label + ": " + truncation_detail(tr, size));
        }
        const QTypeTraits* traits = qtype_traits(t.type_id);
        if (!traits) {
            std::string why = "unknown tensor type id " + std::to_string(t.type_id);
            if (t.type_id == 105 || t.type_id == 106) why += " (a newer ROCmFP mixed type whose layout is not published)";
            throw UnsupportedError(p + ": " + label + ": " + why);
        }
        t.type_name = traits->name;
        if (t.ne[0] % traits->block_size != 0) {
            throw format_error(label + ": first dimension " + std::to_string(t.ne[0]) + " is not a multiple of the " +
                               t.type_name + " block size " + std::to_string(traits->block_size));
        }
        uint64_t row_bytes = 0;
        if (mul_overflows(t.ne[0] / traits->block_size, traits->type_size, &row_bytes) ||
            mul_overflows(row_bytes, t.n_elements / t.ne[0], &t.nbytes)) {
            throw format_error(label + ": byte size overflows");
        }
        // Same size through the table's own helper, which the kernels use to walk rows.
        if (qtype_row_bytes(t.type_id, t.ne[0], label) != row_bytes) throw format_error(label + ": row size mismatch");
        tensor_index_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }

    // --- data section: placement of every tensor -------------------------------------------
    const uint64_t header_end = cur.pos();
    if (add_overflows(header_end, alignment_ - 1, &data_offset_)) throw format_error("data offset overflows");
    data_offset_ -= data_offset_ % alignment_;
    for (auto& t : tensors_) {
        const std::string label = "tensor " + gguf_quote(t.name);
        if (t.offset % alignment_ != 0) {
            throw format_error(label + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                               std::to_string(alignment_));
        }
        uint64_t end = 0;
        if (add_overflows(data_offset_, t.offset, &t.abs_offset) || add_overflows(t.abs_offset, t.nbytes, &end) ||
            end > size) {
            throw format_error(label + ": data (" + std::to_string(t.nbytes) + " bytes at data offset " +
                               std::to_string(t.offset) + ") runs past the end of the file (" + std::to_string(size) +
                               " bytes, data section starts at " + std::to_string(data_offset_) + ")");
        }
        t.data = bytes_->data() + t.abs_offset;
    }
    std::vector<const GGUFTensorInfo*> by_offset;
    by_offset.reserve(tensors_.size());
    for (const auto& t : tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GGUFTensorInfo* a, const GGUFTensorInfo* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < by_offset.size(); ++k) {
        const GGUFTensorInfo* a = by_offset[k - 1];
        const GGUFTensorInfo* b = by_offset[k];
        if (b->offset < a->offset + a->nbytes) {  // no overflow: both ends were checked against the file size
            throw format_error("tensors " + gguf_quote(a->name) + " " + range_text(a->offset, a->offset + a->nbytes) +
                               " and " + gguf_quote(b->name) + " " + range_text(b->offset, b->offset + b->nbytes) +
                               " overlap (offsets relative to the data section)");
        }
    }
}

// --- lookups and typed getters -----------------------------------------------------------

const GGUFValue* GGUFFile::find(const std::string& key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const GGUFValue& GGUFFile::get(const std::string& key) const {
    const GGUFValue* v = find(key);
    if (!v) throw FormatError(path() + ": metadata key " + gguf_quote(key) + " not found");
    return *v;
}

const GGUFTensorInfo* GGUFFile::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GGUFTensorInfo& GGUFFile::tensor(const std::string& name) const {
    const GGUFTensorInfo* t = find_tensor(name);
    if (!t) throw ArgumentError(path() + ": no tensor named " + gguf_quote(name));
    return *t;
}

namespace {

[[noreturn]] void type_mismatch(const std::string& path, const std::string& key, const char* expected,
                                const GGUFValue& v) {
    throw FormatError(path + ": metadata key " + gguf_quote(key) + ": expected " + expected + ", found " +
                      gguf_value_type_name(v));
}

// Integer types every value of which fits the target: the lossless widenings.
bool widens_to(GGUFType from, bool to_signed, int to_bits) {
    if (!gguf_is_integer(from)) return false;
    const int from_bits = static_cast<int>(gguf_scalar_size(from)) * 8;
    if (gguf_is_signed(from)) return to_signed && from_bits <= to_bits;
    return to_signed ? from_bits < to_bits : from_bits <= to_bits;
}

int64_t as_i64(const GGUFValue& v) { return gguf_is_signed(v.type) ? v.i : static_cast<int64_t>(v.u); }

template <class T>
std::vector<T> int_array(const GGUFFile& f, const std::string& key, const char* expected, bool to_signed, int bits) {
    const GGUFValue& v = f.get(key);
    if (!v.is_array() || !widens_to(v.elem_type, to_signed, bits)) type_mismatch(f.path(), key, expected, v);
    std::vector<T> out;
    out.reserve(static_cast<size_t>(v.count));
    for (uint64_t k = 0; k < v.count; ++k) {
        const GGUFValue e = v.scalar_at(k);
        out.push_back(static_cast<T>(to_signed ? as_i64(e) : static_cast<int64_t>(e.u)));
    }
    return out;
}

}  // namespace

uint32_t GGUFFile::get_u32(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (!widens_to(v.type, false, 32)) type_mismatch(path(), key, "UINT32", v);
    return static_cast<uint32_t>(v.u);
}

uint64_t GGUFFile::get_u64(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (!widens_to(v.type, false, 64)) type_mismatch(path(), key, "UINT64", v);
    return v.u;
}

int32_t GGUFFile::get_i32(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (!widens_to(v.type, true, 32)) type_mismatch(path(), key, "INT32", v);
    return static_cast<int32_t>(as_i64(v));
}

int64_t GGUFFile::get_i64(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (!widens_to(v.type, true, 64)) type_mismatch(path(), key, "INT64", v);
    return as_i64(v);
}

float GGUFFile::get_f32(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (v.type != GGUFType::FLOAT32) type_mismatch(path(), key, "FLOAT32", v);
    return static_cast<float>(v.f);
}

double GGUFFile::get_f64(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (v.type != GGUFType::FLOAT64 && v.type != GGUFType::FLOAT32) type_mismatch(path(), key, "FLOAT64", v);
    return v.f;
}

bool GGUFFile::get_bool(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (v.type != GGUFType::BOOL) type_mismatch(path(), key, "BOOL", v);
    return v.b;
}

const std::string& GGUFFile::get_string(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (v.type != GGUFType::STRING) type_mismatch(path(), key, "STRING", v);
    return v.str;
}

std::vector<uint32_t> GGUFFile::get_u32_array(const std::string& key) const {
    return int_array<uint32_t>(*this, key, "ARRAY[UINT32]", false, 32);
}

std::vector<int32_t> GGUFFile::get_i32_array(const std::string& key) const {
    return int_array<int32_t>(*this, key, "ARRAY[INT32]", true, 32);
}

std::vector<int64_t> GGUFFile::get_i64_array(const std::string& key) const {
    return int_array<int64_t>(*this, key, "ARRAY[INT64]", true, 64);
}

std::vector<float> GGUFFile::get_f32_array(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (!v.is_array() || v.elem_type != GGUFType::FLOAT32) type_mismatch(path(), key, "ARRAY[FLOAT32]", v);
    std::vector<float> out(static_cast<size_t>(v.count));
    if (v.count) std::memcpy(out.data(), v.raw, out.size() * sizeof(float));
    return out;
}

std::vector<std::string> GGUFFile::get_string_array(const std::string& key) const {
    const GGUFValue& v = get(key);
    if (!v.is_array() || v.elem_type != GGUFType::STRING) type_mismatch(path(), key, "ARRAY[STRING]", v);
    return std::vector<std::string>(v.strs.begin(), v.strs.end());
}

}  // namespace ds4
