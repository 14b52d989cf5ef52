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
}
