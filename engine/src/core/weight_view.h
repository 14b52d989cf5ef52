// Views of the tensors a model computes with, pointing into the GGUF mapping
// (quantised weights are used in place, never expanded). Every view has an id,
// its index in the model's WeightTable: a backend that keeps weights elsewhere
// (device memory, or float copies of small vectors) maps views by id when
// Backend::bind_weights is called. Below both the model and the backends.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds4 {

// One tensor: ggml type id, data in the mapping, ne[] (ggml order, innermost first).
// A matrix with ne = [in, out, (experts)] has n_rows() = out rows of ne[0] values.
struct WeightView {
    std::string name;
    int32_t id = -1;      // index in the WeightTable it came from
    bool vector = false;  // a small weight-like table (norm, bias, sink, HC scale/base, APE): backends
                          // keep it as floats; everything else is a matrix used through matmul
    uint32_t type = 0;
    const uint8_t* data = nullptr;
    int64_t ne[4] = {1, 1, 1, 1};
    uint64_t row_bytes = 0;  // bytes of one row of ne[0] values

    bool present() const { return data != nullptr; }
    int64_t n_in() const { return ne[0]; }
    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    int64_t n_elements() const { return ne[0] * n_rows(); }
    uint64_t bytes() const { return row_bytes * (uint64_t)n_rows(); }
    const uint8_t* row(int64_t r) const { return data + (uint64_t)r * row_bytes; }
};

// Every view a model hands its backend, views[id].id == id.
struct WeightTable {
    std::vector<WeightView> views;
};

// What Backend::moe computes with: the routed experts' stacked matrices
// ([E, F, X], [F, E, X]) and the shared expert's.
struct MoeWeights {
    WeightView gate_exps, up_exps, down_exps, gate_shexp, up_shexp, down_shexp;
};

}  // namespace ds4
