#include "backend/cpu/cpu_moe.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "common/error.h"
#include "core/weight_view.h"
#include "quant/quant_dot.h"

namespace ds4 {

namespace {

// silu(min(gate, c)) * clamp(up, -c, c); no clamp when c <= 1e-6 (ds4.c and llama.cpp).
float clamped_swiglu(float gate, float up, double c) {
    double g = gate, u = up;
    if (c > 1e-6) {
        g = std::min(g, c);
        u = std::min(std::max(u, -c), c);
    }
    return (float)(g * cpu_sigmoid(g) * u);
}

// Rows of one expert's matrix inside a (possibly 3-D) weight tensor.
struct Mat {
    uint32_t type = 0;
    const uint8_t* data = nullptr;  // row 0 of this expert
    int64_t row_bytes = 0, n_in = 0;
    const char* name = nullptr;  // the tensor's name (errors)
    const uint8_t* row(int64_t r) const { return data + r * row_bytes; }
};

Mat expert_mat(const WeightView& w, int64_t e) {
    Mat m;
    m.type = w.type;
    m.data = w.data + (uint64_t)e * (uint64_t)w.ne[1] * w.row_bytes;
    m.row_bytes = (int64_t)w.row_bytes;
    m.n_in = w.n_in();
    m.name = w.name.c_str();
    return m;
}

// One expert's share of the call: m columns (tokens) of x, its gate/up/down.
struct Group {
    Mat gate, up, down;
    double clamp = 0.0;
    const float* x = nullptr;  // m columns of E floats, ldx = E
    int64_t m = 0;
    int64_t F = 0;        // gate/up rows
    int64_t act = 0;      // offset of its [m][F] gate (= SwiGLU output) and up blocks in act/up
    int64_t out_col = 0;  // its first column in out ([cols][E])
};

struct Item {
    int32_t group;
    int32_t r0, r1;
};

// Per calling thread; grows to the largest call, then stays.
struct MoeScratch {
    std::vector<int64_t> count, start, pos;
    std::vector<float> x, act, up, out;
    std::vector<Group> groups;
    std::vector<Item> items;
};

MoeScratch& moe_scratch() {
    thread_local MoeScratch s;
    return s;
}

// Work items per thread in each phase: enough for dynamic load balance, and at most
// ThreadPool::kChunksPerThread so that the pool hands out one item per claim.
constexpr int64_t kItemsPerThread = 3;
constexpr int64_t kRowQuantum = 4;      // the AVX-512 matmul's row tile
constexpr int64_t kDequantCols = 2;     // a row's dequantisation costs about this many columns' FMAs

// Splits every group's `rows(g)` rows into ranges of about equal cost (rows x (m + kDequantCols)),
// about kItemsPerThread per thread in all. The shared expert (the most columns) comes first.
template <class Rows>
void make_items(const std::vector<Group>& groups, Rows rows, int n_threads, std::vector<Item>& items) {
    items.clear();
    double total = 0.0;
    for (const Group& g : groups) total += (double)rows(g) * (double)(g.m + kDequantCols);
    const double per_item = total / (double)std::max<int64_t>(1, (int64_t)n_threads * kItemsPerThread);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
        const Group& g = groups[gi];
        const int64_t R = rows(g);
        int64_t r = n_threads <= 1 ? R : (int64_t)std::ceil(per_item / (double)(g.m + kDequantCols));
        r = std::min(R, std::max<int64_t>(2 * kRowQuantum, (r + kRowQuantum - 1) / kRowQuantum * kRowQuantum));
        for (int64_t r0 = 0; r0 < R; r0 += r) items.push_back({(int32_t)gi, (int32_t)r0, (int32_t)std::min(R, r0 + r)});
    }
}

}  // namespace

void cpu_moe(ThreadPool& pool, const MoeWeights& mw, const float* h, int64_t n_tokens, const int32_t* experts,
             const float* weights, int64_t n_used, double clamp, double clamp_shared, float* y) {
    const int64_t E = mw.down_shexp.n_rows(), K = n_used, n_expert = mw.gate_exps.ne[2];
    if (n_tokens <= 0) return;
    MoeScratch& S = moe_scratch();

    // Columns: (token i, slot k) pairs grouped by expert in ascending id order, tokens
    // ascending within an expert; pos[i*K + k] is the pair's column. The shared
    // expert's n_tokens columns follow (they read h in place).
    S.count.assign((size_t)n_expert, 0);
    for (int64_t j = 0; j < n_tokens * K; ++j) {
        const int32_t e = experts[j];
        if (e < 0 || e >= n_expert) {
            throw ArgumentError("moe: expert id " + std::to_string(e) + " outside 0.." + std::to_string(n_expert - 1));
        }
        S.count[(size_t)e]++;
    }
    S.start.resize((size_t)n_expert);
    int64_t col = 0;
    for (int64_t e = 0; e < n_expert; ++e) {
        S.start[(size_t)e] = col;
        col += S.count[(size_t)e];
    }
    const int64_t n_routed = col, n_cols = n_routed + n_tokens;
    S.pos.resize((size_t)(n_tokens * K));
    S.x.resize((size_t)(n_routed * E));
    for (int64_t i = 0; i < n_tokens; ++i) {
        for (int64_t k = 0; k < K; ++k) {
            const int64_t c = S.start[(size_t)experts[i * K + k]]++;  // start[e] ends as the next expert's start
            S.pos[(size_t)(i * K + k)] = c;
            std::copy(h + i * E, h + (i + 1) * E, S.x.begin() + c * E);
        }
    }

    // Groups: the shared expert, then the routed ones in ascending id order.
    S.groups.clear();
    int64_t act = 0;
    {
        Group g;
        g.gate = expert_mat(mw.gate_shexp, 0);
        g.up = expert_mat(mw.up_shexp, 0);
        g.down = expert_mat(mw.down_shexp, 0);
        g.clamp = clamp_shared;
        g.x = h;
        g.m = n_tokens;
        g.F = mw.gate_shexp.n_rows();
        g.act = act;
        g.out_col = n_routed;
        act += g.m * g.F;
        S.groups.push_back(g);
    }
    const int64_t F_exp = mw.gate_exps.ne[1];
    for (int64_t e = 0; e < n_expert; ++e) {
        const int64_t m = S.count[(size_t)e];
        if (m == 0) continue;
        Group g;
        g.gate = expert_mat(mw.gate_exps, e);
        g.up = expert_mat(mw.up_exps, e);
        g.down = expert_mat(mw.down_exps, e);
        g.clamp = clamp;
        g.m = m;
        g.out_col = S.start[(size_t)e] - m;  // start[e] was advanced past its columns
        g.x = S.x.data() + g.out_col * E;
        g.F = F_exp;
        g.act = act;
        act += g.m * g.F;
        S.groups.push_back(g);
    }
    S.act.resize((size_t)act);
    S.up.resize((size_t)act);
    S.out.resize((size_t)(n_cols * E));

    // The chunk lambdas read everything through one context pointer.
    struct Ctx {
        MoeScratch* S;
        int64_t E, K, n_tokens, n_routed;
        const float* weights;
        float* y;
    } ctx{&S, E, K, n_tokens, n_routed, weights, y};
    const Ctx* c = &ctx;

    // 1. gate and up rows r0..r1 of one expert for all its columns, then SwiGLU in place.
    make_items(S.groups, [](const Group& g) { return g.F; }, pool.size(), S.items);
    pool.parallel_for((int64_t)S.items.size(), 1, [c](int64_t b, int64_t e) {
        MoeScratch& S = *c->S;
        for (int64_t it = b; it < e; ++it) {
            const Item& item = S.items[(size_t)it];
            const Group& g = S.groups[(size_t)item.group];
            const int64_t r0 = item.r0, nr = item.r1 - item.r0, F = g.F;
            float* G = S.act.data() + g.act;
            float* U = S.up.data() + g.act;
            matmul_rows(g.gate.type, g.gate.row(r0), g.gate.row_bytes, nr, g.x, c->E, (int)g.m, G + r0, F,
                        g.gate.n_in, g.gate.name);
            matmul_rows(g.up.type, g.up.row(r0), g.up.row_bytes, nr, g.x, c->E, (int)g.m, U + r0, F, g.up.n_in,
                        g.up.name);
            for (int64_t j = 0; j < g.m; ++j) {
                float* gj = G + j * F;
                const float* uj = U + j * F;
                for (int64_t r = r0; r < r0 + nr; ++r) gj[r] = clamped_swiglu(gj[r], uj[r], g.clamp);
            }
        }
    });

    // 2. down rows r0..r1 of one expert for all its columns.
    make_items(S.groups, [E](const Group&) { return E; }, pool.size(), S.items);
    pool.parallel_for((int64_t)S.items.size(), 1, [c](int64_t b, int64_t e) {
        MoeScratch& S = *c->S;
        for (int64_t it = b; it < e; ++it) {
            const Item& item = S.items[(size_t)it];
            const Group& g = S.groups[(size_t)item.group];
            const int64_t r0 = item.r0, nr = item.r1 - item.r0;
            matmul_rows(g.down.type, g.down.row(r0), g.down.row_bytes, nr, S.act.data() + g.act, g.F, (int)g.m,
                        S.out.data() + g.out_col * c->E + r0, c->E, g.down.n_in, g.down.name);
        }
    });

    // 3. Per-token sums in a fixed order (k = 0..K-1, then the shared expert); each
    // y element is its own sum, so splitting over d cannot change a value.
    pool.parallel_for(E, 128, [c](int64_t db, int64_t de) {
        const MoeScratch& S = *c->S;
        const int64_t E = c->E, K = c->K;
        for (int64_t i = 0; i < c->n_tokens; ++i) {
            const int64_t* pos = S.pos.data() + i * K;
            const float* shared = S.out.data() + (c->n_routed + i) * E;
            for (int64_t d = db; d < de; ++d) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; ++k) acc += (double)c->weights[i * K + k] * (double)S.out[(size_t)(pos[k] * E + d)];
                acc += (double)shared[d];
                c->y[i * E + d] = (float)acc;
            }
        }
    });
}

}  // namespace ds4
