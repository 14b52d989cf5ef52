#include "bindings.h"
#include "build_info.h"
#include "common/cpu_features.h"
#include "common/error.h"

PYBIND11_MODULE(_engine, m) {
    m.doc() = "ds4kit engine core (C++17): GGUF, quantised types, tokenizer, DeepSeek V4 Flash";
    bind_errors(m);
    bind_gguf(m);
    bind_quant(m);
    bind_tokenizer(m);
    bind_sampling(m);
    bind_model(m);
    bind_drafter(m);
    bind_spec(m);
    bind_pool(m);
    bind_backend_compare(m);

    py::dict build;
    build["gpu_backend"] = kDs4kitGpuBackend;
    build["compiler"] = kDs4kitCompiler;
    build["git_sha"] = kDs4kitGitSha;
    m.attr("build_info") = build;
    m.def("cpu_features", &ds4::cpu_features_string, "SIMD features the engine dispatches to on this CPU");
}

void bind_errors(py::module_& m) {
    // Error hierarchy seen from Python: Ds4Error (RuntimeError) is the base of
    // FormatError (bad file), ArgumentError (bad call) and UnsupportedError.
    // Translators run newest first, so the base is registered before its children.
    auto& base = py::register_exception<ds4::Error>(m, "Ds4Error", PyExc_RuntimeError);
    py::register_exception<ds4::FormatError>(m, "FormatError", base);
    py::register_exception<ds4::ArgumentError>(m, "ArgumentError", base);
    py::register_exception<ds4::UnsupportedError>(m, "UnsupportedError", base);
}
