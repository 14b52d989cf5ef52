#include <pybind11/numpy.h>

#include <cstring>

#include "array_out.h"
#include "backend/backend.h"
#include "backend/backend_compare.h"
#include "bindings.h"

void bind_backend_compare(py::module_& m) {
    m.def(
        "compare_backends",
        [](const std::string& model_path, const std::string& backend_a, const std::string& backend_b, uint64_t seed) {
            std::vector<ds4::CompareRecord> recs;
            {
                py::gil_scoped_release nogil;
                recs = ds4::compare_backends(model_path, backend_a, backend_b, seed);
            }
            py::list out;
            for (const ds4::CompareRecord& r : recs) {
                py::dict d;
                d["op"] = r.op;
                d["tensor"] = r.tensor;
                d["type"] = r.type;
                d["ncols"] = r.ncols;
                d["row0"] = r.row0;
                d["rows"] = r.rows;
                d["nerr"] = r.nerr;
                d["maxabs"] = r.maxabs;
                d["bitwise_cols_ok"] = r.bitwise_cols_ok;
                d["note"] = r.note;
                out.append(d);
            }
            return out;
        },
        py::arg("model_path"), py::arg("backend_a"), py::arg("backend_b"), py::arg("seed") = 0,
        "Runs matmul (every F32/F16/Q8_0 matrix, ncols 1..8, row ranges), rms_norm, scale and copy through the "
        "seam on two backends (names as for Model(backend=...)) over the model's weights: a list of dicts with "
        "op, tensor, type, ncols, row0, rows, nerr (||b - a|| / ||a||), maxabs, bitwise_cols_ok (B: each column "
        "bitwise equal to it computed alone) and note");

    m.def(
        "row_top_k",
        [](py::array_t<float, py::array::c_style | py::array::forcecast> x, int64_t k, const std::string& backend) {
            if (x.ndim() != 2) throw ds4::ArgumentError("row_top_k: x must be 2-D [rows, n]");
            const int64_t rows = x.shape(0), n = x.shape(1);
            ds4::check_row_top_k("row_top_k", rows, n, k);
            std::vector<float> in(x.data(), x.data() + rows * n);
            std::vector<int32_t> ids((size_t)(rows * k));
            std::vector<float> vals((size_t)(rows * k));
            {
                py::gil_scoped_release nogil;
                std::unique_ptr<ds4::Backend> be = ds4::make_backend(backend, 0);
                auto bx = be->alloc(std::max<size_t>(in.size(), 1) * sizeof(float));
                auto bi = be->alloc(std::max<size_t>(ids.size(), 1) * sizeof(int32_t));
                auto bv = be->alloc(std::max<size_t>(vals.size(), 1) * sizeof(float));
                be->upload(bx->as<float>(), in.data(), rows * n);
                be->row_top_k(bx->as<const float>(), rows, n, k, bi->as<int32_t>(), bv->as<float>());
                be->download(ids.data(), bi->as<const int32_t>(), rows * k);
                be->download(vals.data(), bv->as<const float>(), rows * k);
                be->synchronize();
            }
            return py::make_tuple(to_array(std::move(ids), {(py::ssize_t)rows, (py::ssize_t)k}),
                                  to_array(std::move(vals), {(py::ssize_t)rows, (py::ssize_t)k}));
        },
        py::arg("x"), py::arg("k"), py::arg("backend") = "cpu",
        "Backend::row_top_k through the seam on a fresh backend (a name as for Model(backend=...)): (ids int32 "
        "[rows, k], values float32 [rows, k]), each row's k largest values, largest first, ties to the lower "
        "index, NaN last");
}
