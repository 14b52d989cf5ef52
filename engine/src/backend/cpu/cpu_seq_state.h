// The CPU backend's sequence state (backend.h SeqState): host memory.
//
// Rows are stored as float holding F16 values (every store rounds to F16, as the
// model stores them), so attention reads them with an exact widening instead of
// converting F16 per call. Every ring is indexed by position (slot p % rows):
//   - the window ring has n_swa + max_rewind - 1 slots: a block stores all its
//     KV rows before any of its tokens attends, and every token still finds its
//     n_swa predecessors (max_rewind >= max_block); a rewind of up to
//     max_rewind positions finds the window before it intact;
//   - each compressor ring keeps kappa and score rows of the last
//     window + max_rewind positions (window 8 for ratio 4: the previous and the
//     current window of 4; 128 for ratio 128), so pooling reads its positions
//     wherever the sequence rewound to. Positions before 0 read as score -1e30
//     (D) and kappa 0, which is what ratio 4's first "previous window" holds.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"

namespace ds4 {

struct CpuCompressor {
    int64_t window = 0;  // positions one pooled row reads (8 for ratio 4, else the ratio)
    int64_t rows = 0;    // ring slots: window + max_rewind
    int64_t width = 0;   // values per position (2 * row_dim for ratio 4)
    std::vector<float> kv, score;

    float* kv_at(int64_t p) { return kv.data() + (p % rows) * width; }
    float* score_at(int64_t p) { return score.data() + (p % rows) * width; }
};

struct CpuLayerState {
    int64_t ratio = 0;
    std::vector<float> ring;       // [ring_rows][D], position p in slot p % ring_rows
    std::vector<float> comp_rows;  // [n_comp][D], row floor(p / ratio); grows with the context
    int64_t n_comp = 0;            // rows stored (inside a block, ahead of SeqState::pos())
    std::vector<float> idx_rows;   // [n_idx][d_i] (ratio 4)
    int64_t n_idx = 0;
    CpuCompressor comp, idx_comp;
};

class CpuSeqState final : public SeqState {
public:
    explicit CpuSeqState(const SeqShape& shape);
    int64_t bytes() const override;
    std::unique_ptr<SeqState> clone() const override { return std::make_unique<CpuSeqState>(*this); }
    SeqStateImage to_image() const override;
    // The state an image describes (sizes checked against the shape).
    static std::unique_ptr<CpuSeqState> from_image(const SeqShape& shape, const SeqStateImage& image);

    // Window row of position p (valid while p is among the last ring_rows stored).
    const float* ring_row(int64_t il, int64_t p) const {
        return layers[(size_t)il].ring.data() + (p % ring_rows) * shape().head_dim;
    }

    int64_t ring_rows = 0;
    std::vector<CpuLayerState> layers;

protected:
    void drop_after(int64_t p) override;
};

// The state behind a SeqState the CPU backend made (throws if another backend made it).
CpuSeqState& cpu_state(SeqState& st);
const CpuSeqState& cpu_state(const SeqState& st);

}  // namespace ds4
