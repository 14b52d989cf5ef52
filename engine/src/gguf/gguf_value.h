// GGUF metadata values. Scalars are decoded at open time; arrays of fixed-size
// scalars keep a pointer into the file bytes (a 129k-entry score table is not
// copied until someone asks for it); arrays of strings or arrays are decoded
// into items. All strings are valid UTF-8 (the parser rejects anything else).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ds4 {

// On-disk value type ids (GGUF spec, v2 and v3).
enum class GGUFType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

// True for the ids 0..12 above.
bool gguf_type_valid(uint32_t id);
// "UINT8", ..., "FLOAT64"; "UNKNOWN(<id>)" for an invalid id.
std::string gguf_type_name(GGUFType t);
// Bytes of one fixed-size scalar; 0 for STRING and ARRAY.
uint32_t gguf_scalar_size(GGUFType t);
bool gguf_is_integer(GGUFType t);
bool gguf_is_signed(GGUFType t);

struct GGUFValue {
    GGUFType type = GGUFType::UINT8;

    // Scalars: integers land in u (unsigned types) or i (signed types); floats in f; bool in b.
    uint64_t u = 0;
    int64_t i = 0;
    double f = 0.0;
    bool b = false;
    std::string str;  // STRING

    // ARRAY: element type and count. For fixed-size element types `raw` points
    // at count * gguf_scalar_size(elem_type) little-endian bytes inside the file;
    // STRING elements are views into the file (`strs`), ARRAY elements are
    // decoded into `items`. Pointers and views stay valid while the file's
    // bytes (GGUFFile::bytes()) are alive.
    GGUFType elem_type = GGUFType::UINT8;
    uint64_t count = 0;
    const uint8_t* raw = nullptr;
    std::vector<std::string_view> strs;
    std::vector<GGUFValue> items;

    bool is_array() const { return type == GGUFType::ARRAY; }
    // Element k of a fixed-size scalar array, decoded into a scalar GGUFValue.
    // Precondition: is_array(), elem_type fixed-size, k < count.
    GGUFValue scalar_at(uint64_t k) const;
};

// Type of a value as text: "UINT32", "STRING", "ARRAY[FLOAT32]", "ARRAY[ARRAY[INT32]]";
// an array of arrays whose inner types differ reads "ARRAY[ARRAY[MIXED]]", and an
// empty array of arrays "ARRAY[ARRAY]".
std::string gguf_value_type_name(const GGUFValue& v);

}  // namespace ds4
