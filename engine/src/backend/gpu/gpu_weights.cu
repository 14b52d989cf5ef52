// WeightStore (gpu_weights.h): host code only; nothing here runs on the device.
#include "backend/gpu/gpu_compat.h"

#if DS4_GPU_HOST_CODE
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"
#include "backend/gpu/gpu_weights.h"
#include "core/numerics.h"
#include "quant/dequant_blocks.h"

namespace ds4 {
namespace gpu {

namespace {

constexpr uint64_t kAlign = 256;  // every copy starts on a 256-byte boundary

uint64_t align_up(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// Elements per block of a type block_dequant_for decodes (float types: one per "block").
int64_t block_elems(uint32_t type) {
    switch (type) {
        case 0: case 1: case 30: return 1;
        case 10: case 12: case 16: return 256;
        default: return 32;
    }
}

// The model marks its small weight-like tables (WeightView::vector); each gets a float copy,
// decoded as the CPU backend's bind_weights does (dequantize_row: gguf-py's bits), in any
// type the engine decodes (a synthetic file may quantise an APE table, say).
bool wants_float_copy(const WeightView& v) {
    return v.present() && v.vector && block_dequant_for(v.type) != nullptr && v.n_in() % block_elems(v.type) == 0;
}

std::vector<float> to_floats(const WeightView& v) {
    std::vector<float> out((size_t)v.n_elements());
    const BlockDequant deq = block_dequant_for(v.type);
    const int64_t be = block_elems(v.type), nb = v.n_in() / be;
    const uint64_t bb = v.row_bytes / (uint64_t)nb;
    for (int64_t r = 0; r < v.n_rows(); ++r) {
        for (int64_t b = 0; b < nb; ++b) deq(v.row(r) + (uint64_t)b * bb, out.data() + r * v.n_in() + b * be);
    }
    return out;
}

// Q8_0 tensors are stored split (gpu_layout.cu); their rows go through a staging buffer of
// at most this many bytes (whole rows), so binding needs no second copy of a tensor.
constexpr uint64_t kStagingBytes = 64ull << 20;
bool stored_split(const WeightView& v) {
    return v.type == 8 && v.n_in() % 32 == 0 && v.row_bytes == (uint64_t)v.n_in() / 32 * 34;
}
uint64_t staging_rows(const WeightView& v) { return std::max<uint64_t>(1, kStagingBytes / v.row_bytes); }
struct Staging {  // freed on every way out of bind (cudaFree waits for the copies using it)
    void* p = nullptr;
    ~Staging() {
        if (p) (void)DS4_GPU_RT(Free)(p);
    }
};

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
    uint64_t total = 0, staging = 0;
    for (size_t i = 0; i < table.views.size(); ++i) {
        const WeightView& v = table.views[i];
        if (v.id != (int32_t)i) {
            throw ArgumentError(DS4_GPU_WHO ": bind_weights: view '" + v.name + "' at index " + std::to_string(i) +
                                " has id " + std::to_string(v.id));
        }
        if (!v.present()) continue;
        if (v.type == 8 && !stored_split(v)) {  // the device decoders read every Q8_0 row split
            throw ArgumentError(DS4_GPU_WHO ": bind_weights: tensor '" + v.name + "' (Q8_0) has rows of " +
                                std::to_string(v.n_in()) + " values in " + std::to_string(v.row_bytes) +
                                " bytes, not whole 34-byte blocks");
        }
        off[i] = total;
        total = align_up(total + v.bytes());
        if (stored_split(v)) {
            staging = std::max(staging, std::min<uint64_t>(v.n_rows(), staging_rows(v)) * v.row_bytes);
        }
        if (wants_float_copy(v)) {
            off_f32[i] = total;
            total = align_up(total + 4 * (uint64_t)v.n_elements());
        }
    }
    size_t free_b = 0, total_b = 0;
    DS4_GPU_CHECK(MemGetInfo, &free_b, &total_b);
    if (total + staging > free_b) {
        throw UnsupportedError(DS4_GPU_WHO ": the model's weights need " + mib(total + staging) +
                               " of device memory; " + mib(free_b) + " of " + mib(total_b) + " are free");
    }
    if (total > 0) gpu_check(DS4_GPU_RT(Malloc)(&block_, total), DS4_GPU_RT_PREFIX "Malloc", mib(total));
    Staging stage;
    if (staging > 0) gpu_check(DS4_GPU_RT(Malloc)(&stage.p, staging), DS4_GPU_RT_PREFIX "Malloc", mib(staging));
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
        if (stored_split(v)) {
            // Slices of whole rows: copy, then split into place (stream order keeps the
            // staging buffer free for the next copy).
            const int64_t step = (int64_t)staging_rows(v);
            for (int64_t r0 = 0; r0 < v.n_rows(); r0 += step) {
                const int64_t rows = std::min<int64_t>(step, v.n_rows() - r0);
                gpu_check(DS4_GPU_RT(MemcpyAsync)(stage.p, v.row(r0), (size_t)rows * v.row_bytes,
                                                  ds4GpuMemcpyHostToDevice, s),
                          DS4_GPU_RT_PREFIX "MemcpyAsync", "tensor '" + v.name + "'");
                launch_q8_0_split(static_cast<const uint8_t*>(stage.p), base + off[i] + (uint64_t)r0 * v.row_bytes,
                                  rows, v.n_in() / 32, stream);
            }
        } else {
            gpu_check(DS4_GPU_RT(MemcpyAsync)(base + off[i], v.data, v.bytes(), ds4GpuMemcpyHostToDevice, s),
                      DS4_GPU_RT_PREFIX "MemcpyAsync", "tensor '" + v.name + "'");
        }
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
