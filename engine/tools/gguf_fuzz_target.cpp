// Fuzz target for the GGUF reader: parse one input from memory, then touch
// everything a caller could (every value, every getter, every tensor's first
// and last byte). ds4::Error is the expected outcome for bad input; any other
// exception, crash or sanitizer report is a bug. Used by the libFuzzer build
// (gguf_fuzz) and by the standalone runner (gguf_fuzz_standalone).
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "gguf/gguf_file.h"

namespace {

uint64_t walk_value(const ds4::GGUFValue& v) {
    uint64_t acc = ds4::gguf_value_type_name(v).size() + v.str.size();
    if (!v.is_array()) return acc + v.u + static_cast<uint64_t>(v.i) + (v.b ? 1 : 0);
    if (v.raw) {
        for (uint64_t k = 0; k < v.count; ++k) acc += v.scalar_at(k).u;
    }
    for (const auto& s : v.strs) acc += s.size() + (s.empty() ? 0 : static_cast<uint8_t>(s.back()));
    for (const auto& item : v.items) acc += walk_value(item);
    return acc;
}

template <class F>
void try_getter(F&& f) {
    try {
        f();
    } catch (const ds4::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        ds4::GGUFFile f(ds4::MappedFile::from_bytes(data, size, "<fuzz input>"));
        volatile uint64_t sink = f.version() + f.alignment() + f.data_offset();
        for (const auto& kv : f.metadata()) {
            sink = sink + walk_value(kv.value);
            const std::string& k = kv.key;
            try_getter([&] { sink = sink + f.get_u32(k); });
            try_getter([&] { sink = sink + f.get_u64(k); });
            try_getter([&] { sink = sink + static_cast<uint64_t>(f.get_i32(k)); });
            try_getter([&] { sink = sink + static_cast<uint64_t>(f.get_i64(k)); });
            try_getter([&] { sink = sink + static_cast<uint64_t>(f.get_f32(k) != 0.0f); });
            try_getter([&] { sink = sink + static_cast<uint64_t>(f.get_f64(k) != 0.0); });
            try_getter([&] { sink = sink + f.get_bool(k); });
            try_getter([&] { sink = sink + f.get_string(k).size(); });
            try_getter([&] { sink = sink + f.get_u32_array(k).size(); });
            try_getter([&] { sink = sink + f.get_i32_array(k).size(); });
            try_getter([&] { sink = sink + f.get_i64_array(k).size(); });
            try_getter([&] { sink = sink + f.get_f32_array(k).size(); });
            try_getter([&] { sink = sink + f.get_string_array(k).size(); });
        }
        for (const auto& t : f.tensors()) {
            if (f.find_tensor(t.name) != &t) __builtin_trap();  // lookup must find this very entry
            sink = sink + t.data[0] + t.data[t.nbytes - 1] + t.ne.size();
        }
        (void)sink;
    } catch (const ds4::Error&) {
    }
    return 0;
}
