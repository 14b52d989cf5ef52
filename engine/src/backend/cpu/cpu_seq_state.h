// The CPU backend's sequence state (backend.h SeqState): host memory.
//
// Rows are stored as float holding F16 values (every store rounds to F16, as the
// model stores them), so attention reads them with an exact widening instead of
// converting F16 per call. The window ring has n_swa + max_block - 1 slots: a
// block stores all its KV rows before any of its tokens attends, and every
// token still finds its n_swa predecessors.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"

namespace ds4 {

// Rolling compressor window (rows are tokens): r rows for r = 128; 8 for r = 4
// (0..3 previous window, 4..7 current). Scores start at -1e30 (D), so an empty
// slot gets weight 0.
struct CpuCompressor {
    int64_t rows = 0, width = 0;
    std::vector<float> kv, score;
};

struct CpuLayerState {
    int64_t ratio = 0;
    std::vector<float> ring;       // [ring_rows][D], position p in slot p % ring_rows
    std::vector<float> comp_rows;  // [n_comp][D], row floor(p / ratio); grows with the context
    int64_t n_comp = 0;
    std::vector<float> idx_rows;   // [n_idx][d_i] (ratio 4)
    int64_t n_idx = 0;
    CpuCompressor comp, idx_comp;
};

class CpuSeqState final : public SeqState {
public:
    explicit CpuSeqState(const SeqShape& shape);
    int64_t n_comp(int64_t il) const override { return layers[(size_t)il].n_comp; }
    int64_t n_idx(int64_t il) const override { return layers[(size_t)il].n_idx; }
    int64_t bytes() const override;
    std::unique_ptr<SeqState> clone() const override { return std::make_unique<CpuSeqState>(*this); }

    // Window row of position p (valid while p is among the last ring_rows stored).
    const float* ring_row(int64_t il, int64_t p) const {
        return layers[(size_t)il].ring.data() + (p % ring_rows) * shape.head_dim;
    }

    SeqShape shape;
    int64_t ring_rows = 0;
    std::vector<CpuLayerState> layers;
};

// The state behind a SeqState the CPU backend made (throws if another backend made it).
CpuSeqState& cpu_state(SeqState& st);
const CpuSeqState& cpu_state(const SeqState& st);

}  // namespace ds4
