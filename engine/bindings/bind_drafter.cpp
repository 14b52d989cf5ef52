// Python view of the DSpark drafter (model/ds4_drafter.h; no engine logic here).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "array_out.h"
#include "bindings.h"
#include "common/error.h"
#include "model/ds4_drafter.h"

namespace {

using F32In = py::array_t<float, py::array::c_style | py::array::forcecast>;

}  // namespace

void bind_drafter(py::module_& m) {
    using ds4::Ds4Drafter;
    py::class_<Ds4Drafter, std::shared_ptr<Ds4Drafter>>(
        m, "Drafter", "A DSpark drafter GGUF bound to its target Model (its embedding, LM head and backend)")
        .def_static(
            "load",
            [](const std::string& path, std::shared_ptr<ds4::Ds4Model> model) {
                py::gil_scoped_release nogil;
                return std::make_shared<Ds4Drafter>(path, std::move(model));
            },
            py::arg("path"), py::arg("model"),
            "Load a 'deepseek4-dflash-draft' GGUF for `model` (FormatError names what does not fit)")
        .def_property_readonly("block_size", [](const Ds4Drafter& d) { return d.config().block_size; })
        .def_property_readonly("mask_token_id", [](const Ds4Drafter& d) { return d.config().mask_token_id; })
        .def_property_readonly("capture_layers", [](const Ds4Drafter& d) { return d.config().capture_layers; })
        .def_property_readonly("markov_rank", [](const Ds4Drafter& d) { return d.config().markov_rank; })
        .def_property_readonly("confidence_dim", [](const Ds4Drafter& d) { return d.config().confidence_dim; })
        .def_property_readonly("max_context", &Ds4Drafter::max_context)
        .def(
            "propose",
            [](Ds4Drafter& d, const F32In& features, int64_t seed, int64_t pos, int64_t candidates) {
                const int64_t E = d.hparams().n_embd, n_cap = d.config().n_target_layers;
                // (n_ctx, n_cap, E) as Session.captured() gives it, or (n_ctx, n_cap * E).
                const bool ok3 = features.ndim() == 3 && features.shape(1) == n_cap && features.shape(2) == E;
                const bool ok2 = features.ndim() == 2 && features.shape(1) == n_cap * E;
                if (!ok3 && !ok2) {
                    throw ds4::ArgumentError("propose: features must be (n_ctx, " + std::to_string(n_cap) + ", " +
                                             std::to_string(E) + ") float32 (Session.captured() rows)");
                }
                if (seed < INT32_MIN || seed > INT32_MAX) throw ds4::ArgumentError("propose: seed token out of range");
                const int64_t n_ctx = features.shape(0);
                ds4::Ds4Proposal p;
                {
                    py::gil_scoped_release nogil;
                    p = d.propose(features.data(), n_ctx, (int32_t)seed, pos, true, candidates);
                }
                const auto B = (py::ssize_t)p.tokens.size();
                const auto V = (py::ssize_t)d.hparams().n_vocab;
                py::dict out;
                out["tokens"] = p.tokens;
                out["logits"] = to_array(std::move(p.logits), {B, V});
                if (p.confidence.empty()) {
                    out["confidence"] = py::none();
                } else {
                    const auto n = (py::ssize_t)p.confidence.size();
                    out["confidence"] = to_array(std::move(p.confidence), {n});
                }
                return out;
            },
            py::arg("features"), py::arg("seed"), py::arg("pos"), py::arg("candidates") = 0,
            "One drafter forward: features of positions pos - n_ctx .. pos - 1 (the last max_context used), "
            "seed = the token at pos. Returns {'tokens': [m] candidates for pos + 1 .., "
            "'logits': float32 [m, n_vocab] (LM head + Markov head), 'confidence': float32 [m] or None}, "
            "m = candidates (the Markov chain stops there) or block_size when candidates <= 0");
}
