// The GPU backend's copy of a model's weight table (Backend::bind_weights): every
// view's bytes uploaded once, as they are in the file (quantised types stay
// quantised; Q8_0 rows are stored split, gpu_dequant.h says how), into one device
// allocation, plus float copies of the small
// weight-like tables the model marks (WeightView::vector: norms, biases, sinks,
// HC scale/base, APE) that element-wise kernels read. Views are found by id;
// a view must be the one bound under its id (same data pointer), so a view from
// another model's table is refused instead of silently reading the wrong tensor.
// Host-only (plain C++ interface); implemented in gpu_weights.cu.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/weight_view.h"

namespace ds4 {
namespace gpu {

struct DeviceWeight {
    const uint8_t* host = nullptr;  // the view's data at bind time (identity check)
    const uint8_t* data = nullptr;  // device copy of its bytes
    const float* f32 = nullptr;     // device float copy of a vector view (any type the engine decodes), or null
};

class WeightStore {
public:
    WeightStore() = default;
    WeightStore(const WeightStore&) = delete;
    WeightStore& operator=(const WeightStore&) = delete;
    ~WeightStore();

    // Replaces whatever was bound; synchronises the stream before returning. Throws
    // UnsupportedError when the device has too little free memory.
    void bind(const WeightTable& table, void* stream);
    // The device copy of v; `op` names the calling operation in errors.
    const DeviceWeight& get(const WeightView& v, const char* op) const;
    uint64_t device_bytes() const { return bytes_; }

private:
    void release();
    std::vector<DeviceWeight> by_id_;
    void* block_ = nullptr;  // the one device allocation
    uint64_t bytes_ = 0;
};

}  // namespace gpu
}  // namespace ds4
