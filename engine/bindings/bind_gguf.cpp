// Python view of ds4::GGUFFile. Conversion only: every check lives in engine/src/gguf.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <vector>

#include "bindings.h"
#include "gguf/gguf_file.h"

using ds4::GGUFFile;
using ds4::GGUFTensorInfo;
using ds4::GGUFType;
using ds4::GGUFValue;

namespace {

// numpy dtype of a fixed-size GGUF element type (little-endian, as on disk).
py::dtype numpy_dtype(GGUFType t) {
    switch (t) {
        case GGUFType::UINT8: return py::dtype("u1");
        case GGUFType::INT8: return py::dtype("i1");
        case GGUFType::UINT16: return py::dtype("<u2");
        case GGUFType::INT16: return py::dtype("<i2");
        case GGUFType::UINT32: return py::dtype("<u4");
        case GGUFType::INT32: return py::dtype("<i4");
        case GGUFType::UINT64: return py::dtype("<u8");
        case GGUFType::INT64: return py::dtype("<i8");
        case GGUFType::FLOAT32: return py::dtype("<f4");
        case GGUFType::FLOAT64: return py::dtype("<f8");
        default: return py::dtype("?");  // BOOL
    }
}

// Scalars become int/float/bool/str; numeric arrays numpy arrays (copies, so
// they outlive the file); string arrays lists of str; arrays of arrays lists.
py::object to_python(const GGUFValue& v) {
    switch (v.type) {
        case GGUFType::STRING: return py::str(v.str);
        case GGUFType::BOOL: return py::bool_(v.b);
        case GGUFType::FLOAT32: case GGUFType::FLOAT64: return py::float_(v.f);
        case GGUFType::ARRAY: {
            if (v.elem_type == GGUFType::STRING) {
                py::list out(v.strs.size());
                for (size_t k = 0; k < v.strs.size(); ++k) out[k] = py::str(v.strs[k].data(), v.strs[k].size());
                return std::move(out);
            }
            if (v.elem_type == GGUFType::ARRAY) {
                py::list out(v.items.size());
                for (size_t k = 0; k < v.items.size(); ++k) out[k] = to_python(v.items[k]);
                return std::move(out);
            }
            py::array out(numpy_dtype(v.elem_type), std::vector<py::ssize_t>{static_cast<py::ssize_t>(v.count)});
            if (v.count) std::memcpy(out.mutable_data(), v.raw, v.count * ds4::gguf_scalar_size(v.elem_type));
            return std::move(out);
        }
        default:
            if (ds4::gguf_is_signed(v.type)) return py::int_(v.i);
            return py::int_(v.u);
    }
}

py::tuple shape_of(const GGUFTensorInfo& t) {
    py::tuple out(t.ne.size());
    for (size_t k = 0; k < t.ne.size(); ++k) out[k] = py::int_(t.ne[k]);
    return out;
}

// Read-only uint8 view of a tensor's bytes; the capsule owns a reference to the
// mapping, so the view stays valid after the GGUFFile is gone.
py::array tensor_view(const GGUFFile& f, const std::string& name) {
    const GGUFTensorInfo& t = f.tensor(name);
    auto* keep = new std::shared_ptr<const ds4::MappedFile>(f.bytes());
    py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<const ds4::MappedFile>*>(p); });
    py::array view(py::dtype("u1"), {static_cast<py::ssize_t>(t.nbytes)}, {static_cast<py::ssize_t>(1)}, t.data, owner);
    view.attr("flags").attr("writeable") = false;  // the mapping is PROT_READ
    return view;
}

}  // namespace

void bind_gguf(py::module_& m) {
    py::class_<GGUFTensorInfo>(m, "GGUFTensor", "One entry of a GGUF tensor table (shape in ggml ne order)")
        .def_readonly("name", &GGUFTensorInfo::name)
        .def_readonly("type_id", &GGUFTensorInfo::type_id)
        .def_readonly("type_name", &GGUFTensorInfo::type_name)
        .def_property_readonly("shape", &shape_of)
        .def_readonly("n_elements", &GGUFTensorInfo::n_elements)
        .def_readonly("offset", &GGUFTensorInfo::offset, "offset relative to the data section")
        .def_readonly("abs_offset", &GGUFTensorInfo::abs_offset, "offset from the start of the file")
        .def_readonly("nbytes", &GGUFTensorInfo::nbytes)
        .def("__repr__", [](const GGUFTensorInfo& t) {
            return "<GGUFTensor " + t.name + " " + t.type_name + " " + py::str(shape_of(t)).cast<std::string>() + ">";
        });

    py::class_<GGUFFile>(m, "GGUFFile",
                         "Read-only, memory-mapped GGUF file (versions 2 and 3), validated at open.\n\n"
                         "metadata: dict in file order; integers -> int, floats -> float, BOOL -> bool,\n"
                         "STRING -> str (invalid UTF-8 is a FormatError), numeric arrays -> numpy arrays\n"
                         "(copies, little-endian dtype of the GGUF type), string arrays -> list[str],\n"
                         "arrays of arrays -> list. tensor shapes are in ggml ne order (innermost first).\n"
                         "tensor_data(name) is a zero-copy read-only uint8 view that keeps the file mapped.\n"
                         "Errors: FormatError (malformed), UnsupportedError (version, tensor type),\n"
                         "ArgumentError (cannot open; unknown tensor name).")
        .def(py::init<const std::string&>(), py::arg("path"), py::call_guard<py::gil_scoped_release>())
        .def_property_readonly("path", &GGUFFile::path)
        .def_property_readonly("version", &GGUFFile::version)
        .def_property_readonly("alignment", &GGUFFile::alignment)
        .def_property_readonly("data_offset", &GGUFFile::data_offset)
        .def_property_readonly("file_size", &GGUFFile::file_size)
        .def_property_readonly("n_tensors", &GGUFFile::n_tensors)
        .def_property_readonly("metadata", [](const GGUFFile& f) {
            py::dict out;  // insertion order = file order
            for (const auto& kv : f.metadata()) out[py::str(kv.key)] = to_python(kv.value);
            return out;
        }, "dict key -> value in file order (numeric arrays as numpy arrays)")
        .def("metadata_type", [](const GGUFFile& f, const std::string& key) {
            return ds4::gguf_value_type_name(f.get(key));
        }, py::arg("key"), "GGUF type name, e.g. 'UINT32' or 'ARRAY[STRING]'")
        .def_property_readonly("tensors", [](const GGUFFile& f) { return f.tensors(); })
        .def("tensor", &GGUFFile::tensor, py::arg("name"), py::return_value_policy::copy)
        .def("tensor_data", &tensor_view, py::arg("name"), "zero-copy read-only uint8 view of the tensor's bytes")
        .def("get_u32", &GGUFFile::get_u32, py::arg("key"))
        .def("get_u64", &GGUFFile::get_u64, py::arg("key"))
        .def("get_i32", &GGUFFile::get_i32, py::arg("key"))
        .def("get_i64", &GGUFFile::get_i64, py::arg("key"))
        .def("get_f32", &GGUFFile::get_f32, py::arg("key"))
        .def("get_f64", &GGUFFile::get_f64, py::arg("key"))
        .def("get_bool", &GGUFFile::get_bool, py::arg("key"))
        .def("get_string", &GGUFFile::get_string, py::arg("key"))
        .def("get_u32_array", &GGUFFile::get_u32_array, py::arg("key"))
        .def("get_i32_array", &GGUFFile::get_i32_array, py::arg("key"))
        .def("get_i64_array", &GGUFFile::get_i64_array, py::arg("key"))
        .def("get_f32_array", &GGUFFile::get_f32_array, py::arg("key"))
        .def("get_string_array", &GGUFFile::get_string_array, py::arg("key"))
        .def("__repr__", [](const GGUFFile& f) {
            return "<GGUFFile " + f.path() + " v" + std::to_string(f.version()) + ", " +
                   std::to_string(f.metadata().size()) + " keys, " + std::to_string(f.n_tensors()) + " tensors>";
        });
}
