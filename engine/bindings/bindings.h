// Bindings only: each bind_*.cpp exposes one engine component to Python and
// holds no engine logic of its own.
#pragma once
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_gguf(py::module_& m);
void bind_quant(py::module_& m);
void bind_tokenizer(py::module_& m);
void bind_sampling(py::module_& m);
void bind_model(py::module_& m);
void bind_drafter(py::module_& m);
void bind_spec(py::module_& m);
void bind_pool(py::module_& m);
void bind_backend_compare(py::module_& m);
