#include <pybind11/numpy.h>

#include <string>

#include "bindings.h"
#include "common/error.h"
#include "quant/quant_dot.h"
#include "quant/quant_types.h"

namespace {

using U8Array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;
using F32Array = py::array_t<float, py::array::c_style | py::array::forcecast>;

std::string label(const std::string& name) { return name.empty() ? "tensor <unnamed>" : "tensor '" + name + "'"; }

// Raw bytes must be exactly `need` long for the elements asked for.
void check_bytes(const U8Array& raw, uint64_t need, uint32_t type, int64_t n, const std::string& name) {
    if ((uint64_t)raw.size() != need) {
        throw ds4::ArgumentError(label(name) + ": buffer holds " + std::to_string(raw.size()) + " bytes but " +
                                 std::to_string(n) + " elements of " + ds4::qtype_traits(type)->name + " need " +
                                 std::to_string(need));
    }
}

py::dict traits_dict(const ds4::QTypeTraits& t) {
    py::dict d;
    d["id"] = t.id;
    d["name"] = t.name;
    d["block_size"] = t.block_size;
    d["type_size"] = t.type_size;
    d["kernels"] = t.kernels;
    return d;
}

}  // namespace

void bind_quant(py::module_& m) {
    m.def(
        "dequantize",
        [](uint32_t type, const U8Array& raw, int64_t n, const std::string& name) {
            const uint64_t need = ds4::quant_check_row(type, n, name.c_str());
            check_bytes(raw, need, type, n, name);
            py::array_t<float> out(n);
            {
                py::gil_scoped_release nogil;
                ds4::dequantize_row(type, raw.data(), out.mutable_data(), n, name.c_str());
            }
            return out;
        },
        py::arg("type_id"), py::arg("raw"), py::arg("n_elements"), py::arg("name") = "",
        "Dequantise n_elements of raw bytes of quant type type_id to float32 (scalar reference).");

    m.def(
        "dot_row",
        [](uint32_t type, const U8Array& raw, const F32Array& x, const std::string& name) {
            if (x.ndim() != 1) throw ds4::ArgumentError(label(name) + ": x must be 1-D");
            const int64_t n = x.shape(0);
            check_bytes(raw, ds4::quant_check_row(type, n, name.c_str()), type, n, name);
            py::gil_scoped_release nogil;
            return ds4::dot_row(type, raw.data(), x.data(), n, name.c_str());
        },
        py::arg("type_id"), py::arg("raw"), py::arg("x"), py::arg("name") = "",
        "Dot product of one quantised row with float32 x (len(x) elements).");

    m.def(
        "dot_row_cols",
        [](uint32_t type, const U8Array& raw, py::array_t<float, py::array::forcecast> X, const std::string& name) {
            if (X.ndim() != 2) throw ds4::ArgumentError(label(name) + ": X must be 2-D (ncols, n)");
            // Rows of X may be strided (a view into a wider array): pass the row
            // stride through as ldx; anything else is made C-contiguous first.
            const bool strided_ok = X.strides(1) == (py::ssize_t)sizeof(float) && X.strides(0) >= 0 &&
                                    X.strides(0) % (py::ssize_t)sizeof(float) == 0 &&
                                    X.strides(0) >= X.shape(1) * (py::ssize_t)sizeof(float);
            if (!strided_ok) X = F32Array::ensure(X);
            const int64_t ncols = X.shape(0), n = X.shape(1);
            const int64_t ldx = X.shape(0) > 1 ? (int64_t)(X.strides(0) / sizeof(float)) : n;
            check_bytes(raw, ds4::quant_check_row(type, n, name.c_str()), type, n, name);
            py::array_t<float> out(ncols);
            {
                py::gil_scoped_release nogil;
                ds4::dot_row_cols(type, raw.data(), X.data(), ldx, (int)ncols, out.mutable_data(), n, name.c_str());
            }
            return out;
        },
        py::arg("type_id"), py::arg("raw"), py::arg("X"), py::arg("name") = "",
        "Dot of one quantised row with each row of X (shape (ncols, n), rows may be strided); "
        "bitwise equal to dot_row per column.");

    m.def(
        "matmul_rows",
        [](uint32_t type, const U8Array& raw, const F32Array& X, int64_t n_rows, const std::string& name) {
            if (X.ndim() != 2) throw ds4::ArgumentError(label(name) + ": X must be 2-D (ncols, n)");
            if (n_rows < 0) throw ds4::ArgumentError(label(name) + ": negative row count");
            const int64_t ncols = X.shape(0), n = X.shape(1);
            const uint64_t row_bytes = ds4::quant_check_row(type, n, name.c_str());
            check_bytes(raw, row_bytes * (uint64_t)n_rows, type, n * n_rows, name);
            py::array_t<float> out({(py::ssize_t)ncols, (py::ssize_t)n_rows});
            {
                py::gil_scoped_release nogil;
                ds4::matmul_rows(type, raw.data(), (int64_t)row_bytes, n_rows, X.data(), n, (int)ncols,
                                 out.mutable_data(), n_rows, n, name.c_str());
            }
            return out;
        },
        py::arg("type_id"), py::arg("raw"), py::arg("X"), py::arg("n_rows"), py::arg("name") = "",
        "Y[c, r] = dot_row of row r of an (n_rows x n) quantised matrix with X[c] (X shape (ncols, n)): "
        "the engine's matmul kernel, bit for bit dot_row per element.");

    m.def(
        "matvec",
        [](uint32_t type, const U8Array& raw, const F32Array& x, int64_t n_rows, const std::string& name) {
            if (x.ndim() != 1) throw ds4::ArgumentError(label(name) + ": x must be 1-D");
            if (n_rows < 0) throw ds4::ArgumentError(label(name) + ": negative row count");
            const int64_t n = x.shape(0);
            const uint64_t row_bytes = ds4::quant_check_row(type, n, name.c_str());
            check_bytes(raw, row_bytes * (uint64_t)n_rows, type, n * n_rows, name);
            py::array_t<float> out(n_rows);
            {
                py::gil_scoped_release nogil;
                ds4::matvec(type, raw.data(), (int64_t)row_bytes, n_rows, x.data(), n, out.mutable_data(),
                            name.c_str());
            }
            return out;
        },
        py::arg("type_id"), py::arg("raw"), py::arg("x"), py::arg("n_rows"), py::arg("name") = "",
        "y[r] = dot_row of row r of an (n_rows x len(x)) quantised matrix with x.");

    m.def(
        "qtype_info",
        [](uint32_t id) {
            const ds4::QTypeTraits* t = ds4::qtype_traits(id);
            if (!t) throw ds4::UnsupportedError("unknown quant type id " + std::to_string(id));
            return traits_dict(*t);
        },
        py::arg("id"), "Name, block size, bytes per block and kernel support of a quant type id.");

    m.def(
        "qtypes",
        []() {
            py::list out;
            for (uint32_t id = 0; id < 256; ++id) {
                if (const ds4::QTypeTraits* t = ds4::qtype_traits(id)) out.append(traits_dict(*t));
            }
            return out;
        },
        "Every quant type id the engine knows, in id order.");

    m.def(
        "_fma_f32",
        [](const F32Array& a, const F32Array& b, const F32Array& c) {
            if (a.ndim() != 1 || b.size() != a.size() || c.size() != a.size()) {
                throw ds4::ArgumentError("a, b and c must be 1-D and of one length");
            }
            py::array_t<float> out(a.size());
            ds4::detail::fma_f32_array(a.data(), b.data(), c.data(), out.mutable_data(), a.size());
            return out;
        },
        "fma(a, b, c) per element through the portable dot kernels' fma (for tests).");

    m.def("quant_dispatch", &ds4::quant_dispatch_name,
          "Dot-product implementation in use: 'avx2' or 'scalar' (DS4KIT_CPU_FEATURES caps it).");
}
