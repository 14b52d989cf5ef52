#include "gguf/gguf_value.h"

#include <cstring>

namespace ds4 {

bool gguf_type_valid(uint32_t id) { return id <= 12; }

std::string gguf_type_name(GGUFType t) {
    static const char* const kNames[] = {"UINT8",  "INT8",   "UINT16", "INT16", "UINT32",
                                         "INT32",  "FLOAT32", "BOOL",  "STRING", "ARRAY",
                                         "UINT64", "INT64",  "FLOAT64"};
    const auto id = static_cast<uint32_t>(t);
    if (id <= 12) return kNames[id];
    return "UNKNOWN(" + std::to_string(id) + ")";
}

uint32_t gguf_scalar_size(GGUFType t) {
    switch (t) {
        case GGUFType::UINT8: case GGUFType::INT8: case GGUFType::BOOL: return 1;
        case GGUFType::UINT16: case GGUFType::INT16: return 2;
        case GGUFType::UINT32: case GGUFType::INT32: case GGUFType::FLOAT32: return 4;
        case GGUFType::UINT64: case GGUFType::INT64: case GGUFType::FLOAT64: return 8;
        default: return 0;
    }
}

bool gguf_is_integer(GGUFType t) {
    switch (t) {
        case GGUFType::UINT8: case GGUFType::INT8: case GGUFType::UINT16: case GGUFType::INT16:
        case GGUFType::UINT32: case GGUFType::INT32: case GGUFType::UINT64: case GGUFType::INT64:
            return true;
        default: return false;
    }
}

bool gguf_is_signed(GGUFType t) {
    return t == GGUFType::INT8 || t == GGUFType::INT16 || t == GGUFType::INT32 || t == GGUFType::INT64;
}

GGUFValue GGUFValue::scalar_at(uint64_t k) const {
    GGUFValue v;
    v.type = elem_type;
    const uint8_t* p = raw + k * gguf_scalar_size(elem_type);
    // memcpy: array elements in the file are not aligned to their size.
    switch (elem_type) {
        case GGUFType::UINT8: v.u = p[0]; break;
        case GGUFType::INT8: { int8_t x; std::memcpy(&x, p, 1); v.i = x; break; }
        case GGUFType::UINT16: { uint16_t x; std::memcpy(&x, p, 2); v.u = x; break; }
        case GGUFType::INT16: { int16_t x; std::memcpy(&x, p, 2); v.i = x; break; }
        case GGUFType::UINT32: { uint32_t x; std::memcpy(&x, p, 4); v.u = x; break; }
        case GGUFType::INT32: { int32_t x; std::memcpy(&x, p, 4); v.i = x; break; }
        case GGUFType::UINT64: { uint64_t x; std::memcpy(&x, p, 8); v.u = x; break; }
        case GGUFType::INT64: { int64_t x; std::memcpy(&x, p, 8); v.i = x; break; }
        case GGUFType::FLOAT32: { float x; std::memcpy(&x, p, 4); v.f = x; break; }
        case GGUFType::FLOAT64: { double x; std::memcpy(&x, p, 8); v.f = x; break; }
        case GGUFType::BOOL: v.b = p[0] != 0; break;
        default: break;
    }
    return v;
}

std::string gguf_value_type_name(const GGUFValue& v) {
    if (!v.is_array()) return gguf_type_name(v.type);
    if (v.elem_type != GGUFType::ARRAY) return "ARRAY[" + gguf_type_name(v.elem_type) + "]";
    if (v.items.empty()) return "ARRAY[ARRAY]";
    std::string inner = gguf_value_type_name(v.items[0]);
    for (const auto& item : v.items) {
        if (gguf_value_type_name(item) != inner) return "ARRAY[ARRAY[MIXED]]";
    }
    return "ARRAY[" + inner + "]";
}

}  // namespace ds4
