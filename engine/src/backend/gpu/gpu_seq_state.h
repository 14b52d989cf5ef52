// The GPU backend's sequence state (backend.h SeqState) in device memory, host code only
// (include from .cu files compiled with the runtime). The layout follows the CPU's
// (cpu_seq_state.h): per layer the window ring (F16, n_swa + max_rewind - 1 slots), the
// compressed rows and the indexer rows (F16, grown as the context grows: the host knows
// the counts from the positions), and each compressor's kappa/score rings (float32,
// window + max_rewind slots, scores of positions before 0 at -1e30). Every ring is indexed
// by position, so rewind_to only updates counts. Images are the CPU's arrays in the CPU's
// order (F16 values widened to float), so a snapshot file moves between the backends.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/gpu/gpu_runtime.h"

namespace ds4 {
namespace gpu {

// n elements of T in device memory; freed with the object.
template <class T>
class DevArray {
public:
    DevArray() = default;
    DevArray(const DevArray&) = delete;
    DevArray& operator=(const DevArray&) = delete;
    DevArray(DevArray&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
    DevArray& operator=(DevArray&& o) noexcept {
        std::swap(p_, o.p_);
        std::swap(n_, o.n_);
        return *this;
    }
    ~DevArray() {
        if (p_) (void)DS4_GPU_RT(Free)(p_);
    }
    void allocate(int64_t n, const char* what);
    T* get() const { return p_; }
    int64_t size() const { return n_; }

private:
    T* p_ = nullptr;
    int64_t n_ = 0;
};

struct GpuCompressor {
    int64_t window = 0, rows = 0, width = 0;
    DevArray<float> kv, score;
};

struct GpuLayerState {
    int64_t ratio = 0;
    DevArray<uint16_t> ring;  // [ring_rows][D]
    DevArray<uint16_t> comp;  // [capacity][D]; rows 0..n_comp-1 valid
    int64_t n_comp = 0;
    DevArray<uint16_t> idx;   // [capacity][idx_dim] (ratio 4)
    int64_t n_idx = 0;
    GpuCompressor comp_ring, idx_ring;
};

class GpuSeqState final : public SeqState {
public:
    // init: zero the rings and set the scores to -1e30 (a clone or an image fills them itself).
    GpuSeqState(const SeqShape& shape, ds4_gpu_stream_t stream, bool init = true);
    int64_t bytes() const override;
    std::unique_ptr<SeqState> clone() const override;
    SeqStateImage to_image() const override;
    static std::unique_ptr<GpuSeqState> from_image(const SeqShape& shape, const SeqStateImage& image,
                                                   ds4_gpu_stream_t stream);

    // Room for `rows` stored rows of layer il's compressed (or indexer) rows, keeping those stored.
    // A move to a bigger buffer bumps generation() (recorded step graphs hold the old address).
    void reserve_rows(int64_t il, bool indexer, int64_t rows);
    // The row counts of a state holding every position before p_end: after a replayed step
    // (what its compress calls would have counted) and after a rewind (drop_after).
    void count_rows_to(int64_t p_end);

    // Unique per state object for the process (a recorded graph names the state's buffers), and
    // how many times its row buffers have moved.
    uint64_t id() const { return id_; }
    uint64_t generation() const { return generation_; }

    int64_t ring_rows = 0;
    std::vector<GpuLayerState> layers;

protected:
    void drop_after(int64_t p) override;

private:
    ds4_gpu_stream_t stream_;
    uint64_t id_;
    uint64_t generation_ = 0;
};

GpuSeqState& gpu_state(SeqState& st);
const GpuSeqState& gpu_state(const SeqState& st);

}  // namespace gpu
}  // namespace ds4
