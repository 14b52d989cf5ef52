// Sequence state on the CPU: the window ring stores and the compressors
// (ds4-model.md section 4). Both walk the block's tokens in order: each token
// sees the state its predecessors left. Rings are indexed by position, which
// makes rewinding a matter of counts (cpu_seq_state.h).
#include "backend/cpu/cpu_seq_state.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_numerics.h"
#include "common/error.h"

namespace ds4 {

namespace {

constexpr float kCompressorScoreInit = -1e30f;  // D; L zero-fills

CpuCompressor fresh_compressor(int64_t ratio, int64_t width, int64_t max_rewind) {
    CpuCompressor c;
    c.window = ratio == 4 ? 8 : ratio;
    c.rows = c.window + max_rewind;
    c.width = width;
    c.kv.assign((size_t)(c.rows * width), 0.0f);
    c.score.assign((size_t)(c.rows * width), kCompressorScoreInit);
    return c;
}

// x rounded to F16 and held as float (exact).
void store_f16(const float* x, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(f32_to_f16(x[i]));
}

// Softmax pooling of the window that ends at position q: candidate t is position
// q - window + 1 + t. Ratio 4: column j < Dc pools candidates 0..3 (the previous
// window) at column j and 4..7 (the current one) at column Dc + j; otherwise
// candidates 0..ratio-1 at column j. Positions before 0 hold score -1e30, kappa 0.
void pool_window(CpuCompressor& c, int64_t ratio, int64_t q, int64_t Dc, double* s, double* v, const float** kv_rows,
                 const float** score_rows, float* pooled) {
    const int64_t n_cand = c.window, first = q - c.window + 1;
    for (int64_t t = 0; t < n_cand; ++t) {
        const int64_t p = first + t;
        kv_rows[t] = p < 0 ? nullptr : c.kv_at(p);
        score_rows[t] = p < 0 ? nullptr : c.score_at(p);
    }
    for (int64_t j = 0; j < Dc; ++j) {
        for (int64_t t = 0; t < n_cand; ++t) {
            const int64_t col = (ratio == 4 && t >= 4) ? Dc + j : j;
            s[t] = score_rows[t] ? score_rows[t][col] : kCompressorScoreInit;
            v[t] = kv_rows[t] ? kv_rows[t][col] : 0.0f;
        }
        const double mx = *std::max_element(s, s + n_cand);
        double den = 0.0, num = 0.0;
        for (int64_t t = 0; t < n_cand; ++t) {
            const double e = std::exp(s[t] - mx);
            den += e;
            num += e * v[t];
        }
        pooled[j] = (float)(num / den);
    }
}

}  // namespace

CpuSeqState::CpuSeqState(const SeqShape& s) : SeqState(s) {
    ring_rows = window_slots();
    for (int64_t ratio : s.ratios) {
        CpuLayerState L;
        L.ratio = ratio;
        L.ring.assign((size_t)(ring_rows * s.head_dim), 0.0f);
        if (ratio) L.comp = fresh_compressor(ratio, (ratio == 4 ? 2 : 1) * s.head_dim, s.max_rewind);
        if (ratio == 4) L.idx_comp = fresh_compressor(4, 2 * s.idx_dim, s.max_rewind);
        layers.push_back(std::move(L));
    }
}

void CpuSeqState::drop_after(int64_t p) {
    for (CpuLayerState& L : layers) {
        if (!L.ratio) continue;
        L.n_comp = p / L.ratio;
        L.comp_rows.resize((size_t)(L.n_comp * shape().head_dim));  // shrinking keeps the capacity
        if (L.ratio == 4) {
            L.n_idx = p / 4;
            L.idx_rows.resize((size_t)(L.n_idx * shape().idx_dim));
        }
    }
}

int64_t CpuSeqState::bytes() const {
    int64_t b = 0;
    for (const CpuLayerState& L : layers) {
        b += (int64_t)(L.ring.capacity() + L.comp_rows.capacity() + L.idx_rows.capacity() + L.comp.kv.capacity() +
                       L.comp.score.capacity() + L.idx_comp.kv.capacity() + L.idx_comp.score.capacity()) *
             (int64_t)sizeof(float);
    }
    return b;
}

namespace {

// The arrays of one layer in image order; the same list serves export (const) and import.
template <class Layer>
auto layer_arrays(Layer& L) {
    std::vector<decltype(&L.ring)> a = {&L.ring};
    if (L.ratio) a.insert(a.end(), {&L.comp_rows, &L.comp.kv, &L.comp.score});
    if (L.ratio == 4) a.insert(a.end(), {&L.idx_rows, &L.idx_comp.kv, &L.idx_comp.score});
    return a;
}

}  // namespace

SeqStateImage CpuSeqState::to_image() const {
    SeqStateImage img;
    img.pos = pos();
    img.hwm = high_water();
    for (const CpuLayerState& L : layers) {
        for (const std::vector<float>* v : layer_arrays(L)) img.arrays.push_back(*v);
    }
    return img;
}

std::unique_ptr<CpuSeqState> CpuSeqState::from_image(const SeqShape& shape, const SeqStateImage& img) {
    auto st = std::make_unique<CpuSeqState>(shape);
    if (img.pos < 0 || img.hwm < img.pos || img.hwm > shape.max_ctx) {
        throw ArgumentError("state image: positions " + std::to_string(img.pos) + " (highest " +
                            std::to_string(img.hwm) + ") do not fit max_ctx " + std::to_string(shape.max_ctx));
    }
    size_t k = 0;
    for (size_t il = 0; il < st->layers.size(); ++il) {
        CpuLayerState& L = st->layers[il];
        L.n_comp = L.ratio ? img.pos / L.ratio : 0;
        L.n_idx = L.ratio == 4 ? img.pos / 4 : 0;
        // Stored rows follow from the positions; the rings keep their fixed size.
        L.comp_rows.resize((size_t)(L.n_comp * shape.head_dim));
        L.idx_rows.resize((size_t)(L.n_idx * shape.idx_dim));
        for (std::vector<float>* v : layer_arrays(L)) {
            if (k >= img.arrays.size()) {
                throw ArgumentError("state image: " + std::to_string(img.arrays.size()) +
                                    " arrays, too few for the model's layers");
            }
            if (img.arrays[k].size() != v->size()) {
                throw ArgumentError("state image: array " + std::to_string(k) + " (layer " + std::to_string(il) +
                                    ") holds " + std::to_string(img.arrays[k].size()) + " values, the shape needs " +
                                    std::to_string(v->size()));
            }
            *v = img.arrays[k++];
        }
    }
    if (k != img.arrays.size()) {
        throw ArgumentError("state image: " + std::to_string(img.arrays.size()) + " arrays, the model's layers need " +
                            std::to_string(k));
    }
    st->set_positions(img.pos, img.hwm);
    return st;
}

std::unique_ptr<SeqState> CpuBackend::seq_state_from_image(const SeqShape& shape, const SeqStateImage& image) {
    return CpuSeqState::from_image(shape, image);
}

CpuSeqState& cpu_state(SeqState& st) {
    auto* s = dynamic_cast<CpuSeqState*>(&st);
    if (!s) throw ArgumentError("sequence state was not made by the CPU backend");
    return *s;
}

const CpuSeqState& cpu_state(const SeqState& st) { return cpu_state(const_cast<SeqState&>(st)); }

std::unique_ptr<SeqState> CpuBackend::new_seq_state(const SeqShape& shape) {
    return std::make_unique<CpuSeqState>(shape);
}

void CpuBackend::kv_store(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> kvd) {
    CpuSeqState& S = cpu_state(st);
    if (n > S.shape().max_block) {
        throw ArgumentError("kv_store: block of " + std::to_string(n) + " tokens exceeds max_block " +
                            std::to_string(S.shape().max_block));
    }
    const int64_t D = S.shape().head_dim;
    const float* kv = kvd.get();
    CpuLayerState& L = S.layers[(size_t)il];
    for (int64_t i = 0; i < n; ++i) store_f16(kv + i * D, D, L.ring.data() + ((p0 + i) % S.ring_rows) * D);
}

void CpuBackend::compress(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> kappad,
                          Dev<const float> gated, int64_t ld, const CompressorParams& cp) {
    CpuSeqState& S = cpu_state(st);
    CpuLayerState& L = S.layers[(size_t)il];
    CpuCompressor& c = cp.indexer ? L.idx_comp : L.comp;
    std::vector<float>& out = cp.indexer ? L.idx_rows : L.comp_rows;
    int64_t& count = cp.indexer ? L.n_idx : L.n_comp;
    const int64_t r = L.ratio, W = c.width, Dc = cp.row_dim;
    if (count != p0 / r) {
        throw ArgumentError("compress: layer " + std::to_string(il) + " holds " + std::to_string(count) +
                            " rows, not the " + std::to_string(p0 / r) + " of position " + std::to_string(p0));
    }
    const float *kappa = kappad.get(), *gate = gated.get(), *ape = vec(*cp.ape), *norm = vec(*cp.norm);
    Scratch& SC = scratch();
    SC.f0.resize((size_t)Dc);
    SC.d1.resize((size_t)c.window);
    SC.d2.resize((size_t)c.window);
    SC.rows.resize((size_t)(2 * c.window));
    std::vector<double>& cs = SC.rope_cs;
    cs.resize((size_t)cp.rope->n_rot);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t p = p0 + i;
        const float* ape_row = ape + (p % r) * W;
        float *kv = c.kv_at(p), *score = c.score_at(p);
        for (int64_t j = 0; j < W; ++j) {
            kv[j] = kappa[i * ld + j];
            score[j] = gate[i * ld + j] + ape_row[j];
        }
        if ((p + 1) % r == 0) {
            float* row = SC.f0.data();
            pool_window(c, r, p, Dc, SC.d1.data(), SC.d2.data(), SC.rows.data(), SC.rows.data() + c.window, row);
            cpu_rms_norm_row(row, norm, Dc, cp.rms_eps, row);
            cpu_rope_cos_sin((double)(p + 1 - r), *cp.rope, cs.data());
            cpu_rope_row(row, Dc, cs.data(), cp.rope->n_rot, false);
            if (cp.indexer) {
                cpu_indexer_transform_row(row, Dc, cp.indexer_fp4, SC.d0);
            } else if (cp.fp8_kv) {
                fp8_e4m3_round_trip(row, Dc - cp.n_rot);
            }
            // Grows with the context used (geometrically); attention takes row pointers
            // only after the block's rows are all stored.
            out.resize((size_t)((count + 1) * Dc));
            store_f16(row, Dc, out.data() + count * Dc);
            ++count;
        }
    }
}

}  // namespace ds4
