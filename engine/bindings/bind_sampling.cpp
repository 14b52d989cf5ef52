#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "common/error.h"
#include "sampling/sampler.h"

namespace {

const float* logits_row(const py::array_t<float, py::array::c_style | py::array::forcecast>& logits, int32_t vocab) {
    if (logits.ndim() != 1 || logits.shape(0) != vocab) {
        throw ds4::ArgumentError("sampler: logits must be a 1-D array of the vocabulary size " +
                                 std::to_string(vocab));
    }
    return logits.data();
}

}  // namespace

void bind_sampling(py::module_& m) {
    py::class_<ds4::SamplingParams>(m, "SamplingParams")
        .def(py::init([](float temperature, int32_t top_k, float top_p, float min_p, float repetition_penalty,
                         float presence_penalty, float frequency_penalty, int32_t penalty_last_n, uint64_t seed) {
                 ds4::SamplingParams p;
                 p.temperature = temperature;
                 p.top_k = top_k;
                 p.top_p = top_p;
                 p.min_p = min_p;
                 p.repetition_penalty = repetition_penalty;
                 p.presence_penalty = presence_penalty;
                 p.frequency_penalty = frequency_penalty;
                 p.penalty_last_n = penalty_last_n;
                 p.seed = seed;
                 p.validate();
                 return p;
             }),
             py::arg("temperature") = 0.0f, py::arg("top_k") = 0, py::arg("top_p") = 1.0f, py::arg("min_p") = 0.0f,
             py::arg("repetition_penalty") = 1.0f, py::arg("presence_penalty") = 0.0f,
             py::arg("frequency_penalty") = 0.0f, py::arg("penalty_last_n") = -1, py::arg("seed") = 0)
        .def_readonly("temperature", &ds4::SamplingParams::temperature)
        .def_readonly("top_k", &ds4::SamplingParams::top_k)
        .def_readonly("top_p", &ds4::SamplingParams::top_p)
        .def_readonly("min_p", &ds4::SamplingParams::min_p)
        .def_readonly("repetition_penalty", &ds4::SamplingParams::repetition_penalty)
        .def_readonly("presence_penalty", &ds4::SamplingParams::presence_penalty)
        .def_readonly("frequency_penalty", &ds4::SamplingParams::frequency_penalty)
        .def_readonly("penalty_last_n", &ds4::SamplingParams::penalty_last_n)
        .def_readonly("seed", &ds4::SamplingParams::seed);

    py::class_<ds4::Sampler>(m, "Sampler")
        .def(py::init<const ds4::SamplingParams&, int32_t>(), py::arg("params"), py::arg("vocab_size"))
        .def("sample",
             [](ds4::Sampler& s, py::array_t<float, py::array::c_style | py::array::forcecast> logits,
                const std::vector<int32_t>& history) {
                 const float* row = logits_row(logits, static_cast<int32_t>(logits.size()));
                 return s.sample(row, history);
             },
             py::arg("logits"), py::arg("history") = std::vector<int32_t>{})
        .def("distribution",
             [](const ds4::Sampler& s, py::array_t<float, py::array::c_style | py::array::forcecast> logits,
                const std::vector<int32_t>& history) {
                 const float* row = logits_row(logits, static_cast<int32_t>(logits.size()));
                 ds4::Candidates c = s.distribution(row, history);
                 return py::make_tuple(py::array_t<int32_t>(c.ids.size(), c.ids.data()),
                                       py::array_t<double>(c.probs.size(), c.probs.data()));
             },
             py::arg("logits"), py::arg("history") = std::vector<int32_t>{})
        .def("penalised",
             [](const ds4::Sampler& s, py::array_t<float, py::array::c_style | py::array::forcecast> logits,
                const std::vector<int32_t>& history) {
                 const float* row = logits_row(logits, static_cast<int32_t>(logits.size()));
                 auto v = s.penalised(row, history);
                 return py::array_t<double>(v.size(), v.data());
             },
             py::arg("logits"), py::arg("history") = std::vector<int32_t>{})
        .def_property_readonly("params", &ds4::Sampler::params);
}
