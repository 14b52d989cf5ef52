// WeightStore (gpu_weights.h): host code only; nothing here runs on the device.
#include "backend/gpu/gpu_compat.h"

#if DS4_GPU_HOST_CODE
#include <cstring>
#include <string>
#include <vector>

#include "backend/gpu/gpu_runtime.h"
#include "backend/gpu/gpu_weights.h"
#include "core/numerics.h"

namespace ds4 {
namespace gpu {

namespace {

constexpr uint64_t kAlign = 256;  // every copy starts on a 256-byte boundary
constexpr uint32_t kTypeF32 = 0, kTypeF16 = 1, kTypeBF16 = 30;

uint64_t align_up(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// The model marks its small weight-like tables (WeightView::vector); those in a float
// format get a float copy (other formats: an error naming the tensor when used).
bool wants_float_copy(const WeightView& v) {
    return v.present() && v.vector && (v.type == kTypeF32 || v.type == kTypeF16 || v.type == kTypeBF16);
}

std::vector<float> to_floats(const WeightView& v) {
    std::vector<float> out((size_t)v.n_elements());
    for (int64_t i = 0; i < v.n_elements(); ++i) {
        if (v.type == kTypeF32) {
            std::memcpy(&out[(size_t)i], v.data + 4 * i, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, v.data + 2 * i, 2);
            out[(size_t)i] = v.type == kTypeF16 ? f16_to_f32(h) : num::f32_of((uint32_t)h << 16);
        }
    }
    return out;
}

std::string mib(uint64_t b) { return std::to_string((b + (1u << 20) - 1) >> 20) + " MiB"; }

}  // namespace

WeightStore::~WeightStore() { release(); }

void WeightStore::release() {
    // A destructor cannot throw; a failing free means the context is gone anyway.
    if (block_) (void)DS4_GPU_RT(Free)(block_);
    block_ = nullptr;
    bytes_ = 0;
    by_id_.clear();
}

void WeightStore::bind(const WeightTable& table, void* stream) {
    release();
    // Layout first: one allocation for everything, so binding is one malloc and the
    // memory check is exact.
    std::vector<uint64_t> off(table.views.size()), off_f32(table.views.size(), 0);
    uint64_t total = 0;
    for (size_t i = 0; i < table.views.size(); ++i) {
        const WeightView& v = table.views[i];
        if (v.id != (int32_t)i) {
            throw ArgumentError(DS4_GPU_WHO ": bind_weights: view '" + v.name + "' at index " + std::to_string(i) +
                                " has id " + std::to_string(v.id));
        }
        if (!v.present()) continue;
        off[i] = total;
        total = align_up(total + v.bytes());
        if (wants_float_copy(v)) {
            off_f32[i] = total;
            total = align_up(total + 4 * (uint64_t)v.n_elements());
        }
    }
    size_t free_b = 0, total_b = 0;
    DS4_GPU_CHECK(MemGetInfo, &free_b, &total_b);
    if (total > free_b) {
        throw UnsupportedError(DS4_GPU_WHO ": the model's weights need " + mib(total) + " of device memory; " +
                               mib(free_b) + " of " + mib(total_b) + " are free");
    }
    if (total > 0) gpu_check(DS4_GPU_RT(Malloc)(&block_, total), DS4_GPU_RT_PREFIX "Malloc", mib(total));
    bytes_ = total;
    uint8_t* base = static_cast<uint8_t*>(block_);
    const ds4_gpu_stream_t s = (ds4_gpu_stream_t)stream;
    by_id_.assign(table.views.size(), DeviceWeight{});
    std::vector<std::vector<float>> staged;  // float copies stay alive until the stream is synchronised
    for (size_t i = 0; i < table.views.size(); ++i) {
        const WeightView& v = table.views[i];
        if (!v.present()) continue;
        DeviceWeight& dw = by_id_[i];
        dw.host = v.data;
        dw.data = base + off[i];
        gpu_check(DS4_GPU_RT(MemcpyAsync)(base + off[i], v.data, v.bytes(), ds4GpuMemcpyHostToDevice, s),
                  DS4_GPU_RT_PREFIX "MemcpyAsync", "tensor '" + v.name + "'");
        if (wants_float_copy(v)) {
            staged.push_back(to_floats(v));
            dw.f32 = reinterpret_cast<const float*>(base + off_f32[i]);
            gpu_check(DS4_GPU_RT(MemcpyAsync)(base + off_f32[i], staged.back().data(), 4 * (size_t)v.n_elements(),
                                              ds4GpuMemcpyHostToDevice, s),
                      DS4_GPU_RT_PREFIX "MemcpyAsync", "float copy of '" + v.name + "'");
        }
    }
    DS4_GPU_CHECK(StreamSynchronize, s);
}

const DeviceWeight& WeightStore::get(const WeightView& v, const char* op) const {
    if (v.id < 0 || (size_t)v.id >= by_id_.size() || by_id_[(size_t)v.id].host == nullptr ||
        by_id_[(size_t)v.id].host != v.data) {
        throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + ": tensor '" + v.name + "' (id " +
                            std::to_string(v.id) + ") is not a view this backend bound (bind_weights)");
    }
    return by_id_[(size_t)v.id];
}

}  // namespace gpu
}  // namespace ds4
#endif
