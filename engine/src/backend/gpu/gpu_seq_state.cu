// GpuSeqState (gpu_seq_state.h): host code only; the kernels it uses are in gpu_state.cu
// and gpu_ops.cu. Copies run on the backend's stream; to_image and from_image synchronise.
#include "backend/gpu/gpu_compat.h"

#if DS4_GPU_HOST_CODE
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_seq_state.h"
#include "core/numerics.h"

namespace ds4 {
namespace gpu {

namespace {
constexpr float kScoreInit = -1e30f;
constexpr int64_t kFirstRows = 64;  // compressed rows allocated at first use; then doubled

GpuCompressor make_compressor(int64_t ratio, int64_t width, int64_t max_rewind) {
    GpuCompressor c;
    c.window = ratio == 4 ? 8 : ratio;
    c.rows = c.window + max_rewind;
    c.width = width;
    c.kv.allocate(c.rows * width, "compressor ring");
    c.score.allocate(c.rows * width, "compressor scores");
    return c;
}

template <class T>
void copy_d2d(T* dst, const T* src, int64_t n, ds4_gpu_stream_t s) {
    if (n > 0) DS4_GPU_CHECK(MemcpyAsync, dst, src, (size_t)n * sizeof(T), ds4GpuMemcpyDeviceToDevice, s);
}

std::vector<float> download_f32(const float* src, int64_t n, ds4_gpu_stream_t s) {
    std::vector<float> v((size_t)n);
    if (n > 0) DS4_GPU_CHECK(MemcpyAsync, v.data(), src, (size_t)n * sizeof(float), ds4GpuMemcpyDeviceToHost, s);
    return v;
}

std::vector<uint16_t> download_f16(const uint16_t* src, int64_t n, ds4_gpu_stream_t s) {
    std::vector<uint16_t> v((size_t)n);
    if (n > 0) DS4_GPU_CHECK(MemcpyAsync, v.data(), src, (size_t)n * 2, ds4GpuMemcpyDeviceToHost, s);
    return v;
}
}  // namespace

template <class T>
void DevArray<T>::allocate(int64_t n, const char* what) {
    if (p_) (void)DS4_GPU_RT(Free)(p_);
    p_ = nullptr;
    n_ = n;
    if (n > 0) {
        void* p = nullptr;
        gpu_check(DS4_GPU_RT(Malloc)(&p, (size_t)n * sizeof(T)), DS4_GPU_RT_PREFIX "Malloc",
                  std::string(what) + ", " + std::to_string((size_t)n * sizeof(T)) + " bytes");
        p_ = static_cast<T*>(p);
    }
}
template class DevArray<float>;
template class DevArray<uint16_t>;

namespace {
std::atomic<uint64_t> next_state_id{1};
}  // namespace

GpuSeqState::GpuSeqState(const SeqShape& s, ds4_gpu_stream_t stream, bool init)
    : SeqState(s), stream_(stream), id_(next_state_id++) {
    ring_rows = window_slots();
    for (int64_t ratio : s.ratios) {
        GpuLayerState L;
        L.ratio = ratio;
        L.ring.allocate(ring_rows * s.head_dim, "window ring");
        if (ratio) L.comp_ring = make_compressor(ratio, (ratio == 4 ? 2 : 1) * s.head_dim, s.max_rewind);
        if (ratio == 4) L.idx_ring = make_compressor(4, 2 * s.idx_dim, s.max_rewind);
        if (init) {
            DS4_GPU_CHECK(MemsetAsync, L.ring.get(), 0, (size_t)L.ring.size() * 2, stream_);
            for (GpuCompressor* c : {&L.comp_ring, &L.idx_ring}) {
                if (!c->rows) continue;
                DS4_GPU_CHECK(MemsetAsync, c->kv.get(), 0, (size_t)c->kv.size() * 4, stream_);
                launch_fill(c->score.get(), c->score.size(), kScoreInit, stream_);
            }
        }
        layers.push_back(std::move(L));
    }
}

void GpuSeqState::reserve_rows(int64_t il, bool indexer, int64_t rows) {
    GpuLayerState& L = layers[(size_t)il];
    DevArray<uint16_t>& a = indexer ? L.idx : L.comp;
    const int64_t dim = indexer ? shape().idx_dim : shape().head_dim;
    if (a.size() >= rows * dim) return;
    int64_t cap = a.size() / dim > 0 ? a.size() / dim : kFirstRows;
    while (cap < rows) cap *= 2;
    DevArray<uint16_t> bigger;
    bigger.allocate(cap * dim, indexer ? "indexer rows" : "compressed rows");
    copy_d2d(bigger.get(), a.get(), (indexer ? L.n_idx : L.n_comp) * dim, stream_);
    // The old rows may still be read by work in flight: let it finish before freeing them.
    DS4_GPU_CHECK(StreamSynchronize, stream_);
    a = std::move(bigger);
    ++generation_;
}

void GpuSeqState::count_rows_to(int64_t p_end) {
    for (GpuLayerState& L : layers) {
        if (!L.ratio) continue;
        L.n_comp = p_end / L.ratio;
        if (L.ratio == 4) L.n_idx = p_end / 4;
    }
}

// The rows past p are simply not counted any more (rows are counted from positions).
void GpuSeqState::drop_after(int64_t p) { count_rows_to(p); }

int64_t GpuSeqState::bytes() const {
    int64_t b = 0;
    for (const GpuLayerState& L : layers) {
        b += 2 * (L.ring.size() + L.comp.size() + L.idx.size());
        b += 4 * (L.comp_ring.kv.size() + L.comp_ring.score.size() + L.idx_ring.kv.size() + L.idx_ring.score.size());
    }
    return b;
}

std::unique_ptr<SeqState> GpuSeqState::clone() const {
    auto c = std::make_unique<GpuSeqState>(shape(), stream_, false);
    const int64_t D = shape().head_dim, di = shape().idx_dim;
    for (size_t il = 0; il < layers.size(); ++il) {
        const GpuLayerState& L = layers[il];
        GpuLayerState& M = c->layers[il];
        copy_d2d(M.ring.get(), L.ring.get(), L.ring.size(), stream_);
        if (L.ratio) {
            c->reserve_rows((int64_t)il, false, L.n_comp);
            copy_d2d(M.comp.get(), L.comp.get(), L.n_comp * D, stream_);
            M.n_comp = L.n_comp;
            copy_d2d(M.comp_ring.kv.get(), L.comp_ring.kv.get(), L.comp_ring.kv.size(), stream_);
            copy_d2d(M.comp_ring.score.get(), L.comp_ring.score.get(), L.comp_ring.score.size(), stream_);
        }
        if (L.ratio == 4) {
            c->reserve_rows((int64_t)il, true, L.n_idx);
            copy_d2d(M.idx.get(), L.idx.get(), L.n_idx * di, stream_);
            M.n_idx = L.n_idx;
            copy_d2d(M.idx_ring.kv.get(), L.idx_ring.kv.get(), L.idx_ring.kv.size(), stream_);
            copy_d2d(M.idx_ring.score.get(), L.idx_ring.score.get(), L.idx_ring.score.size(), stream_);
        }
    }
    c->set_positions(pos(), high_water());
    return c;
}

SeqStateImage GpuSeqState::to_image() const {
    // Downloads first (one synchronise), conversions after.
    struct Part {
        std::vector<uint16_t> f16;
        std::vector<float> f32;
        bool half;
    };
    std::vector<Part> parts;
    const int64_t D = shape().head_dim, di = shape().idx_dim;
    auto half = [&](const uint16_t* p, int64_t n) { parts.push_back({download_f16(p, n, stream_), {}, true}); };
    auto full = [&](const float* p, int64_t n) { parts.push_back({{}, download_f32(p, n, stream_), false}); };
    for (const GpuLayerState& L : layers) {
        half(L.ring.get(), L.ring.size());
        if (L.ratio) {
            half(L.comp.get(), L.n_comp * D);
            full(L.comp_ring.kv.get(), L.comp_ring.kv.size());
            full(L.comp_ring.score.get(), L.comp_ring.score.size());
        }
        if (L.ratio == 4) {
            half(L.idx.get(), L.n_idx * di);
            full(L.idx_ring.kv.get(), L.idx_ring.kv.size());
            full(L.idx_ring.score.get(), L.idx_ring.score.size());
        }
    }
    DS4_GPU_CHECK(StreamSynchronize, stream_);
    SeqStateImage img;
    img.pos = pos();
    img.hwm = high_water();
    for (Part& p : parts) {
        if (!p.half) {
            img.arrays.push_back(std::move(p.f32));
            continue;
        }
        std::vector<float> v(p.f16.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] = f16_to_f32(p.f16[i]);
        img.arrays.push_back(std::move(v));
    }
    return img;
}

std::unique_ptr<GpuSeqState> GpuSeqState::from_image(const SeqShape& shape, const SeqStateImage& img,
                                                     ds4_gpu_stream_t stream) {
    if (img.pos < 0 || img.hwm < img.pos || img.hwm > shape.max_ctx) {
        throw ArgumentError("state image: positions " + std::to_string(img.pos) + " (highest " +
                            std::to_string(img.hwm) + ") do not fit max_ctx " + std::to_string(shape.max_ctx));
    }
    auto st = std::make_unique<GpuSeqState>(shape, stream, false);
    const int64_t D = shape.head_dim, di = shape.idx_dim;
    std::vector<std::vector<uint16_t>> staged;  // F16 copies alive until the final synchronise
    size_t k = 0;
    auto next = [&](size_t il, int64_t want) -> const std::vector<float>& {
        if (k >= img.arrays.size()) {
            throw ArgumentError("state image: " + std::to_string(img.arrays.size()) +
                                " arrays, too few for the model's layers");
        }
        const std::vector<float>& a = img.arrays[k];
        if ((int64_t)a.size() != want) {
            throw ArgumentError("state image: array " + std::to_string(k) + " (layer " + std::to_string(il) +
                                ") holds " + std::to_string(a.size()) + " values, the shape needs " +
                                std::to_string(want));
        }
        ++k;
        return a;
    };
    auto put_half = [&](size_t il, uint16_t* dst, int64_t n) {
        const std::vector<float>& a = next(il, n);
        staged.emplace_back(a.size());
        for (size_t i = 0; i < a.size(); ++i) staged.back()[i] = f32_to_f16(a[i]);
        if (n > 0) DS4_GPU_CHECK(MemcpyAsync, dst, staged.back().data(), (size_t)n * 2, ds4GpuMemcpyHostToDevice, stream);
    };
    auto put_full = [&](size_t il, float* dst, int64_t n) {
        const std::vector<float>& a = next(il, n);
        if (n > 0) DS4_GPU_CHECK(MemcpyAsync, dst, a.data(), (size_t)n * 4, ds4GpuMemcpyHostToDevice, stream);
    };
    for (size_t il = 0; il < st->layers.size(); ++il) {
        GpuLayerState& L = st->layers[il];
        put_half(il, L.ring.get(), L.ring.size());
        if (L.ratio) {
            st->reserve_rows((int64_t)il, false, img.pos / L.ratio);  // before the count: nothing to keep
            L.n_comp = img.pos / L.ratio;
            put_half(il, L.comp.get(), L.n_comp * D);
            put_full(il, L.comp_ring.kv.get(), L.comp_ring.kv.size());
            put_full(il, L.comp_ring.score.get(), L.comp_ring.score.size());
        }
        if (L.ratio == 4) {
            st->reserve_rows((int64_t)il, true, img.pos / 4);
            L.n_idx = img.pos / 4;
            put_half(il, L.idx.get(), L.n_idx * di);
            put_full(il, L.idx_ring.kv.get(), L.idx_ring.kv.size());
            put_full(il, L.idx_ring.score.get(), L.idx_ring.score.size());
        }
    }
    if (k != img.arrays.size()) {
        throw ArgumentError("state image: " + std::to_string(img.arrays.size()) + " arrays, the model's layers need " +
                            std::to_string(k));
    }
    DS4_GPU_CHECK(StreamSynchronize, stream);
    st->set_positions(img.pos, img.hwm);
    return st;
}

GpuSeqState& gpu_state(SeqState& st) {
    auto* s = dynamic_cast<GpuSeqState*>(&st);
    if (!s) throw ArgumentError(DS4_GPU_WHO ": sequence state was not made by the GPU backend");
    return *s;
}

const GpuSeqState& gpu_state(const SeqState& st) { return gpu_state(const_cast<SeqState&>(st)); }

}  // namespace gpu
}  // namespace ds4
#endif
