// Python view of ds4::Tokenizer (engine/src/tokenizer/tokenizer.h).
#include <pybind11/stl.h>

#include <climits>

#include "bindings.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer_gguf.h"
#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace {

// Text arguments may be str (encoded as UTF-8; lone surrogates raise) or
// bytes-like (taken as is, any bytes). The view stays valid while `obj` lives;
// bytearray is copied because another thread could resize it.
std::string_view text_arg(const py::handle& obj, std::string& copy, const char* what) {
    if (PyUnicode_Check(obj.ptr())) {
        Py_ssize_t n = 0;
        const char* p = PyUnicode_AsUTF8AndSize(obj.ptr(), &n);
        if (p == nullptr) throw py::error_already_set();
        return {p, static_cast<size_t>(n)};
    }
    if (PyBytes_Check(obj.ptr())) {
        char* p = nullptr;
        Py_ssize_t n = 0;
        if (PyBytes_AsStringAndSize(obj.ptr(), &p, &n) != 0) throw py::error_already_set();
        return {p, static_cast<size_t>(n)};
    }
    if (PyByteArray_Check(obj.ptr())) {
        copy.assign(PyByteArray_AsString(obj.ptr()), static_cast<size_t>(PyByteArray_Size(obj.ptr())));
        return copy;
    }
    throw py::type_error(std::string(what) + " must be str or bytes, not " +
                         std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
}

std::vector<int32_t> ids_arg(const py::handle& ids, int32_t vocab_size) {
    std::vector<int32_t> out;
    if (py::isinstance<py::sequence>(ids)) out.reserve(py::len(ids));
    size_t pos = 0;
    for (py::handle item : py::iter(ids)) {
        long long v = PyLong_AsLongLong(item.ptr());
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            throw ds4::ArgumentError("decode: item at position " + std::to_string(pos) + " is not an int token id (" +
                                     std::string(py::repr(item)) + ")");
        }
        if (v < 0 || v >= vocab_size)
            throw ds4::ArgumentError("decode: token id " + std::to_string(v) + " at position " + std::to_string(pos) +
                                     " is out of range [0, " + std::to_string(vocab_size) + ")");
        out.push_back(static_cast<int32_t>(v));
        ++pos;
    }
    return out;
}

py::list to_list(const std::vector<int32_t>& ids) {
    py::list out(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) PyList_SET_ITEM(out.ptr(), i, PyLong_FromLong(ids[i]));
    return out;
}

py::object optional_id(int32_t id) { return id < 0 ? py::none() : py::object(py::int_(id)); }

}  // namespace

void bind_tokenizer(py::module_& m) {
    using ds4::Tokenizer;
    m.attr("tokenizer_unicode_version") = Tokenizer::unicode_version();
    py::class_<Tokenizer>(m, "Tokenizer",
                          "GPT-2 byte-level BPE with the joyai-llm pre-tokenizer, built from a GGUF's "
                          "tokenizer.ggml.* metadata.")
        .def(py::init([](std::vector<std::string> tokens, const std::vector<std::string>& merges,
                         const std::vector<int32_t>& token_types, const std::string& pre, int32_t bos_id,
                         int32_t eos_id) {
                 py::gil_scoped_release release;
                 return new Tokenizer(std::move(tokens), merges, token_types, pre, bos_id, eos_id);
             }),
             py::arg("tokens"), py::arg("merges"), py::arg("token_types"), py::arg("pre"), py::arg("bos_id") = -1,
             py::arg("eos_id") = -1,
             "tokens/merges/token_types/pre/bos_id/eos_id as in tokenizer.ggml.*; -1 means no BOS/EOS.")
        .def(
            "encode",
            [](const Tokenizer& t, const py::object& text, bool parse_special) {
                std::string copy;
                std::string_view view = text_arg(text, copy, "text");
                std::vector<int32_t> ids;
                {
                    py::gil_scoped_release release;
                    ids = t.encode(view, parse_special);
                }
                return to_list(ids);
            },
            py::arg("text"), py::arg("parse_special") = true,
            "Token ids of str (UTF-8) or bytes (any bytes; invalid UTF-8 bytes become single-byte tokens). "
            "parse_special=False leaves control tokens' text as plain text.")
        .def(
            "decode",
            [](const Tokenizer& t, const py::handle& ids) {
                std::vector<int32_t> v = ids_arg(ids, t.vocab_size());
                std::string out = t.decode(v);
                return py::bytes(out);
            },
            py::arg("ids"), "Exact bytes of the ids (decode(encode(b)) == b).")
        .def(
            "decode_str",
            [](const Tokenizer& t, const py::handle& ids) {
                std::string out = t.decode(ids_arg(ids, t.vocab_size()));
                PyObject* s = PyUnicode_DecodeUTF8(out.data(), static_cast<Py_ssize_t>(out.size()), "replace");
                if (s == nullptr) throw py::error_already_set();
                return py::reinterpret_steal<py::str>(s);
            },
            py::arg("ids"), "decode() as str; invalid UTF-8 becomes U+FFFD.")
        .def("token_to_piece", [](const Tokenizer& t, int32_t id) { return py::bytes(t.token_to_piece(id)); },
             py::arg("id"), "Raw bytes one token stands for.")
        .def(
            "piece_to_id",
            [](const Tokenizer& t, const py::object& piece) -> py::object {
                std::string copy;
                auto id = t.piece_to_id(text_arg(piece, copy, "piece"));
                return id ? py::object(py::int_(*id)) : py::none();
            },
            py::arg("piece"), "Lowest id whose bytes equal piece (str as UTF-8), or None.")
        .def("token_text", &Tokenizer::token_text, py::arg("id"), "The vocabulary string as stored in the GGUF.")
        .def("token_type", [](const Tokenizer& t, int32_t id) { return static_cast<int32_t>(t.token_type(id)); },
             py::arg("id"), "1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused.")
        .def(
            "special_token_id",
            [](const Tokenizer& t, const std::string& text) {
                auto id = t.find_special(text);
                if (!id) throw ds4::ArgumentError("no control or user-defined token with text '" + text + "'");
                return *id;
            },
            py::arg("text"), "Id of a control/user-defined token by its text; ArgumentError if absent.")
        .def(
            "find_special",
            [](const Tokenizer& t, const std::string& text) -> py::object {
                auto id = t.find_special(text);
                return id ? py::object(py::int_(*id)) : py::none();
            },
            py::arg("text"), "Like special_token_id but returns None if absent.")
        .def(
            "special_tokens",
            [](const Tokenizer& t) {
                py::dict out;
                for (auto& [text, id] : t.special_tokens()) out[py::str(text)] = id;
                return out;
            },
            "{text: id} of all control and user-defined tokens.")
        .def(
            "pre_tokenize",
            [](const Tokenizer& t, const py::object& text) {
                std::string copy;
                py::list out;
                for (auto& p : t.pre_tokenize(text_arg(text, copy, "text"))) out.append(py::bytes(p));
                return out;
            },
            py::arg("text"), "The pieces the pre-tokenizer cuts text into (no added-token matching).")
        .def_static(
            "from_gguf", [](const ds4::GGUFFile& f) { return ds4::tokenizer_from_gguf(f); }, py::arg("gguf"),
            "The tokenizer a GGUF's tokenizer.ggml.* metadata describes (built in C++)")
        .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
        .def("__len__", &Tokenizer::vocab_size)
        .def_property_readonly("bos_id", [](const Tokenizer& t) { return optional_id(t.bos_id()); })
        .def_property_readonly("eos_id", [](const Tokenizer& t) { return optional_id(t.eos_id()); })
        .def_property_readonly("pre", &Tokenizer::pre);
}
