// The operations other than matmul and rms_norm, through the full seam on two backends
// (backend_compare.h): embed, rope_tail, the FP8 KV and indexer roundings, the HC
// operations, route, moe and attention_inputs, on one model's weights, with fresh random inputs and poisoned
// outputs. bitwise_cols_ok: for hc_pre and moe, each token of a multi-token call bitwise
// equal to it computed alone on B (the verify == decode property); for the others, a second
// run on B bitwise equal to the first.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend_compare_detail.h"
#include "model/ds4_block.h"
#include "model/ds4_model.h"

namespace ds4 {

namespace {

using namespace compare_detail;
using Words = std::vector<float>;  // one buffer's 4-byte words (floats, or int32 / double bit patterns)

Words words_of(const std::vector<int32_t>& v) {
    Words w(v.size());
    std::memcpy(w.data(), v.data(), v.size() * 4);
    return w;
}
Words words_of(const std::vector<double>& v) {
    Words w(2 * v.size());
    std::memcpy(w.data(), v.data(), v.size() * 8);
    return w;
}
// Doubles held in words, as floats for the error measure (unwritten ones read as NaN).
Words doubles_as_floats(const Words& w) {
    Words f(w.size() / 2);
    for (size_t i = 0; i < f.size(); ++i) {
        double d;
        std::memcpy(&d, w.data() + 2 * i, 8);
        f[i] = (float)d;
    }
    return f;
}
Dev<const int32_t> ints(Dev<float> d) { return Dev<const int32_t>(reinterpret_cast<const int32_t*>(d.get())); }
Dev<int32_t> ints_out(Dev<float> d) { return Dev<int32_t>(reinterpret_cast<int32_t*>(d.get())); }
Dev<double> dbl(Dev<float> d) { return Dev<double>(reinterpret_cast<double*>(d.get())); }

// Uploads `ins`, poisons outputs of `out_n` words, runs op(inputs, outputs), downloads.
template <class Op>
std::vector<Words> run_bufs(Backend& be, const std::vector<Words>& ins, const std::vector<size_t>& out_n, Op op) {
    std::vector<std::unique_ptr<DeviceBuffer>> keep;
    std::vector<Dev<float>> di, dout;
    for (const Words& w : ins) {
        keep.push_back(be.alloc(std::max<size_t>(w.size(), 1) * 4));
        di.push_back(keep.back()->as<float>());
        be.upload(di.back(), w.data(), (int64_t)w.size());
    }
    std::vector<Words> out;
    for (size_t n : out_n) {
        keep.push_back(be.alloc(std::max<size_t>(n, 1) * 4));
        dout.push_back(keep.back()->as<float>());
        out.emplace_back(n, poison());
        be.upload(dout.back(), out.back().data(), (int64_t)n);
    }
    op(di, dout);
    for (size_t k = 0; k < out.size(); ++k) be.download(out[k].data(), Dev<const float>(dout[k]), (int64_t)out[k].size());
    be.synchronize();
    return out;
}

struct Cases {
    Backend& a;
    Backend& b;
    const Ds4Model& m;
    uint64_t seed;
    std::vector<CompareRecord>& out;
    uint64_t case_no = 0;

    std::mt19937_64 rng() { return std::mt19937_64(seed * 0xD1B54A32D192ED03ull + ++case_no); }

    // One record: A against B over the whole output; bitwise_ok as the caller determined it.
    void record(const std::string& op, const std::string& tensor, const std::string& type, int ncols, int64_t rows,
                const Words& ya, const Words& yb, bool bitwise_ok, const std::string& note = "") {
        CompareRecord rec;
        rec.op = op;
        rec.tensor = tensor;
        rec.type = type;
        rec.ncols = ncols;
        rec.rows = rows;
        measure(ya, yb, [](size_t) { return true; }, rec);
        rec.bitwise_cols_ok = bitwise_ok;
        if (rec.note.empty()) rec.note = note;
        out.push_back(rec);
    }

    // A, B and a second B run of a single-output op; the record compares A and B.
    template <class Op>
    void simple(const std::string& op_name, const std::string& tensor, const std::string& type, int ncols, int64_t rows,
                const std::vector<Words>& ins, size_t out_n, Op op) {
        auto go = [&](Backend& be) {
            return run_bufs(be, ins, {out_n}, [&](std::vector<Dev<float>>& in, std::vector<Dev<float>>& o) {
                op(be, in, o[0]);
            })[0];
        };
        const Words ya = go(a), yb = go(b), yb2 = go(b);
        record(op_name, tensor, type, ncols, rows, ya, yb, std::memcmp(yb.data(), yb2.data(), yb.size() * 4) == 0,
               std::memcmp(yb.data(), yb2.data(), yb.size() * 4) == 0 ? "" : "backend B differs from run to run");
    }
};

std::vector<int32_t> random_ids(std::mt19937_64& r, size_t n, int64_t below) {
    std::uniform_int_distribution<int64_t> u(0, below - 1);
    std::vector<int32_t> v(n);
    for (int32_t& x : v) x = (int32_t)u(r);
    return v;
}

void embed_case(Cases& c) {
    const Ds4Hparams& hp = c.m.hparams();
    const WeightView& W = c.m.weights().token_embd;
    auto r = c.rng();
    const int64_t n = 5, E = W.n_in();
    c.simple("embed", W.name, type_name(W.type), (int)n, E, {words_of(random_ids(r, n, W.n_rows()))},
             (size_t)(n * hp.n_hc * E), [&](Backend& be, std::vector<Dev<float>>& in, Dev<float> o) {
                 be.embed(W, ints(in[0]), n, hp.n_hc, o);
             });
}

void rope_cases(Cases& c) {
    const Ds4Hparams& hp = c.m.hparams();
    const int64_t n = 5, rows = 3, len = hp.head_dim;
    for (int64_t il : {(int64_t)0, hp.n_layer - 1}) {
        const RopeSpec spec = c.m.rope(il);
        for (bool inverse : {false, true}) {
            auto r = c.rng();
            c.simple("rope_tail", "layer " + std::to_string(il) + (inverse ? " inverse" : ""), "F32", (int)n, len,
                     {random_input(r, (size_t)(n * rows * len))}, (size_t)(n * rows * len),
                     [&](Backend& be, std::vector<Dev<float>>& in, Dev<float> o) {
                         be.copy(o, Dev<const float>(in[0]), n * rows * len);
                         be.rope_tail(o, n, rows, len, 1000, spec, inverse);
                     });
        }
    }
}

void rounding_cases(Cases& c) {
    const Ds4Hparams& hp = c.m.hparams();
    const int64_t n = 4, D = hp.head_dim, d = hp.idx_head_dim;
    auto r = c.rng();
    c.simple("fp8_kv_round_trip", "", "F32", (int)n, D, {random_input(r, (size_t)(n * D))}, (size_t)(n * D),
             [&](Backend& be, std::vector<Dev<float>>& in, Dev<float> o) {
                 be.copy(o, Dev<const float>(in[0]), n * D);
                 be.fp8_kv_round_trip(o, n, D, hp.n_rot);
             });
    if (d <= 0) return;
    for (bool fp4 : {false, true}) {
        auto r2 = c.rng();
        c.simple("indexer_transform", fp4 ? "fp4" : "", "F32", (int)n, d, {random_input(r2, (size_t)(n * d))},
                 (size_t)(n * d), [&](Backend& be, std::vector<Dev<float>>& in, Dev<float> o) {
                     be.copy(o, Dev<const float>(in[0]), n * d);
                     be.indexer_transform(o, n, d, fp4);
                 });
    }
}

// add, and row_top_k over rows of the vocabulary's length with planted ties (ids and values
// compared as words: both must be exact).
void add_and_top_k_cases(Cases& c) {
    const int64_t V = c.m.hparams().n_vocab, rows = 3, k = 5;
    auto r = c.rng();
    c.simple("add", "", "F32", 1, V, {random_input(r, (size_t)V), random_input(r, (size_t)V)}, (size_t)V,
             [&](Backend& be, std::vector<Dev<float>>& in, Dev<float> o) {
                 be.copy(o, Dev<const float>(in[0]), V);
                 be.add(o, Dev<const float>(in[1]), V);
             });
    Words x = random_input(r, (size_t)(rows * V));
    for (int64_t row = 0; row < rows; ++row) {  // the row's maximum again at 3 later places
        float* p = x.data() + row * V;
        const int64_t top = std::max_element(p, p + V) - p;
        for (int64_t j = 1; j <= 3; ++j) p[(top + j * V / 4) % V] = p[top];
    }
    auto go = [&](Backend& be) {
        const std::vector<Words> o = run_bufs(be, {x}, {(size_t)(rows * k), (size_t)(rows * k)},
                                              [&](std::vector<Dev<float>>& in, std::vector<Dev<float>>& out) {
                                                  be.row_top_k(Dev<const float>(in[0]), rows, V, k, ints_out(out[0]),
                                                               out[1]);
                                              });
        Words both = o[0];
        both.insert(both.end(), o[1].begin(), o[1].end());
        return both;
    };
    const Words ya = go(c.a), yb = go(c.b), yb2 = go(c.b);
    // Ids compare as words too: any difference is a nonzero error (an id's bits as a float).
    const bool same = std::memcmp(ya.data(), yb.data(), ya.size() * 4) == 0;
    c.record("row_top_k", "", "F32", (int)rows, V, ya, yb, std::memcmp(yb.data(), yb2.data(), yb.size() * 4) == 0,
             same ? "" : "ids or values differ from backend A");
    if (!same && c.out.back().nerr == 0.0) c.out.back().nerr = INFINITY;  // an id's bits as a float may not show
}

void hc_cases(Cases& c) {
    const Ds4Hparams& hp = c.m.hparams();
    const Ds4LayerWeights& L = c.m.weights().layers[0];
    const int64_t n = 3, HC = hp.n_hc, E = hp.n_embd, SS = hc_split_size(HC);
    // hc_pre: u and split; each token bitwise equal to it computed alone on B.
    {
        auto r = c.rng();
        const Words X = random_input(r, (size_t)(n * HC * E));
        auto go = [&](Backend& be, int64_t t0, int64_t nt) {
            return run_bufs(be, {X}, {(size_t)(nt * E), (size_t)(2 * nt * SS)},
                            [&](std::vector<Dev<float>>& in, std::vector<Dev<float>>& o) {
                                be.hc_pre(Dev<const float>(in[0] + t0 * HC * E), nt, HC, E, L.hc_attn_fn,
                                          L.hc_attn_scale, L.hc_attn_base, hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps,
                                          o[0], dbl(o[1]));
                            });
        };
        const std::vector<Words> ya = go(c.a, 0, n), yb = go(c.b, 0, n);
        bool ok = true;
        for (int64_t t = 0; t < n && ok; ++t) {
            const std::vector<Words> y1 = go(c.b, t, 1);
            ok = std::memcmp(y1[0].data(), yb[0].data() + t * E, (size_t)E * 4) == 0 &&
                 std::memcmp(y1[1].data(), yb[1].data() + 2 * t * SS, (size_t)SS * 8) == 0;
        }
        const std::string note = ok ? "" : "a token differs from the same token computed alone";
        c.record("hc_pre", L.hc_attn_fn.name + " (u)", type_name(L.hc_attn_fn.type), (int)n, E, ya[0], yb[0], ok, note);
        c.record("hc_pre", L.hc_attn_fn.name + " (split)", "F64", (int)n, SS, doubles_as_floats(ya[1]),
                 doubles_as_floats(yb[1]), ok, note);
    }
    // hc_pre_norm: u normalised by the attention norm, A against B; on B bitwise hc_pre then
    // rms_norm (an override that fuses them, the GPU's, must keep the two calls' bits).
    {
        auto r = c.rng();
        const Words X = random_input(r, (size_t)(n * HC * E));
        auto go = [&](Backend& be, bool fused) {
            return run_bufs(be, {X}, {(size_t)(n * E), (size_t)(2 * n * SS)},
                            [&](std::vector<Dev<float>>& in, std::vector<Dev<float>>& o) {
                                if (fused) {
                                    be.hc_pre_norm(Dev<const float>(in[0]), n, HC, E, L.hc_attn_fn, L.hc_attn_scale,
                                                   L.hc_attn_base, hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps,
                                                   L.attn_norm, o[0], dbl(o[1]));
                                } else {
                                    be.hc_pre(Dev<const float>(in[0]), n, HC, E, L.hc_attn_fn, L.hc_attn_scale,
                                              L.hc_attn_base, hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps, o[0],
                                              dbl(o[1]));
                                    be.rms_norm(o[0], &L.attn_norm, E, n, hp.rms_eps, o[0]);
                                }
                            });
        };
        const std::vector<Words> ya = go(c.a, true), yb = go(c.b, true), yb2 = go(c.b, false);
        const bool ok = std::memcmp(yb[0].data(), yb2[0].data(), yb[0].size() * 4) == 0 &&
                        std::memcmp(yb[1].data(), yb2[1].data(), yb[1].size() * 4) == 0;
        c.record("hc_pre_norm", L.attn_norm.name + " (u)", "F32", (int)n, E, ya[0], yb[0], ok,
                 ok ? "" : "backend B differs from its hc_pre then rms_norm");
    }
    // hc_post with a split of positive weights.
    {
        auto r = c.rng();
        std::uniform_real_distribution<double> u(0.05, 1.0);
        std::vector<double> split((size_t)(n * SS));
        for (double& v : split) v = u(r);
        c.simple("hc_post", "", "F32", (int)n, E,
                 {random_input(r, (size_t)(n * E)), random_input(r, (size_t)(n * HC * E)), words_of(split)},
                 (size_t)(n * HC * E), [&](Backend& be, std::vector<Dev<float>>& in, Dev<float> o) {
                     be.hc_post(Dev<const float>(in[0]), Dev<const float>(in[1]), n, HC, E,
                                Dev<const double>(dbl(in[2])), o);
                 });
    }
    const Ds4Weights& W = c.m.weights();
    {
        auto r = c.rng();
        c.simple("hc_head", W.output_hc_fn.name, type_name(W.output_hc_fn.type), (int)n, E,
                 {random_input(r, (size_t)(n * HC * E))}, (size_t)(n * E),
                 [&](Backend& be, std::vector<Dev<float>>& in, Dev<float> o) {
                     be.hc_head(Dev<const float>(in[0]), n, HC, E, W.output_hc_fn, W.output_hc_scale, W.output_hc_base,
                                hp.hc_eps, hp.rms_eps, o);
                 });
    }
    {
        auto r = c.rng();
        c.simple("hc_mean", "", "F32", (int)n, E, {random_input(r, (size_t)(n * HC * E))}, (size_t)(n * E),
                 [&](Backend& be, std::vector<Dev<float>>& in, Dev<float> o) {
                     be.hc_mean(Dev<const float>(in[0]), n, HC, E, o, E);
                 });
    }
}

void route_cases(Cases& c) {
    const Ds4Hparams& hp = c.m.hparams();
    const int64_t n = 6, NX = hp.n_expert, K = hp.n_expert_used;
    for (int64_t il : {(int64_t)0, hp.n_layer - 1}) {
        const Ds4LayerWeights& L = c.m.weights().layers[(size_t)il];
        const RouteParams rp = layer_route_params(hp, L, il);
        auto r = c.rng();
        const std::vector<Words> ins = {random_input(r, (size_t)(n * NX)), words_of(random_ids(r, n, hp.n_vocab))};
        auto go = [&](Backend& be) {
            return run_bufs(be, ins, {(size_t)(n * K), (size_t)(n * K)},
                            [&](std::vector<Dev<float>>& in, std::vector<Dev<float>>& o) {
                                be.route(Dev<const float>(in[0]), ints(in[1]), n, rp, ints_out(o[0]), o[1]);
                            });
        };
        const std::vector<Words> ya = go(c.a), yb = go(c.b);
        const bool same_ids = std::memcmp(ya[0].data(), yb[0].data(), ya[0].size() * 4) == 0;
        const std::string what = rp.hash_table ? "hash " + L.ffn_gate_tid2eid.name : "bias " + L.exp_probs_b.name;
        c.record("route", what, "F32", (int)n, K, ya[1], yb[1], same_ids, same_ids ? "" : "the experts chosen differ");
    }
}

void moe_case(Cases& c) {
    const Ds4Hparams& hp = c.m.hparams();
    const int64_t il = hp.n_layer - 1, n = 4, K = hp.n_expert_used, E = hp.n_embd, NX = hp.n_expert;
    const Ds4LayerWeights& L = c.m.weights().layers[(size_t)il];
    auto r = c.rng();
    std::vector<int32_t> ex((size_t)(n * K));
    std::vector<int32_t> ids((size_t)NX);
    for (int64_t i = 0; i < n; ++i) {  // K distinct experts per token; tokens 0 and 1 share their first
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), r);
        std::copy(ids.begin(), ids.begin() + K, ex.begin() + i * K);
    }
    if (n > 1 && std::find(ex.begin() + K, ex.begin() + 2 * K, ex[0]) == ex.begin() + 2 * K) ex[(size_t)K] = ex[0];
    std::uniform_real_distribution<double> u(0.05, 1.0);
    Words w((size_t)(n * K));
    for (float& v : w) v = (float)u(r);
    const Words h = random_input(r, (size_t)(n * E));
    const double clamp = hp.swiglu_clamp_exp[(size_t)il], clamp_sh = hp.swiglu_clamp_shexp[(size_t)il];
    auto go = [&](Backend& be, int64_t t0, int64_t nt) {
        return run_bufs(be, {h, words_of(ex), w}, {(size_t)(nt * E)},
                        [&](std::vector<Dev<float>>& in, std::vector<Dev<float>>& o) {
                            be.moe(L.ffn, Dev<const float>(in[0] + t0 * E), nt, ints(in[1] + t0 * K),
                                   Dev<const float>(in[2] + t0 * K), K, clamp, clamp_sh, o[0]);
                        })[0];
    };
    const Words ya = go(c.a, 0, n), yb = go(c.b, 0, n);
    bool ok = true;
    for (int64_t t = 0; t < n && ok; ++t) ok = std::memcmp(go(c.b, t, 1).data(), yb.data() + t * E, (size_t)E * 4) == 0;
    c.record("moe", L.ffn.gate_exps.name, type_name(L.ffn.gate_exps.type), (int)n, E, ya, yb, ok,
             ok ? "" : "a token differs from the same token computed alone");
}

// attention_inputs on a fresh state of the model's shape (last layer, 3 tokens at position 5):
// the query heads, and the KV rows with the whole state image (the rings start zeroed on every
// backend), A against B; on B bitwise the six calls it stands for (the GPU fuses them).
void attention_inputs_case(Cases& c) {
    const Ds4Hparams& hp = c.m.hparams();
    const int64_t il = hp.n_layer - 1, n = 3, p0 = 5, H = hp.n_head, D = hp.head_dim;
    const Ds4LayerWeights& L = c.m.weights().layers[(size_t)il];
    const RopeSpec rope = c.m.rope(il);
    SeqShape shape;
    shape.ratios = hp.compress_ratios;
    shape.n_swa = hp.n_swa;
    shape.head_dim = D;
    shape.idx_dim = hp.idx_head_dim;
    shape.max_ctx = 64;
    shape.max_block = 8;
    shape.max_rewind = 8;
    auto r = c.rng();
    const std::vector<Words> ins = {random_input(r, (size_t)(n * H * D)), random_input(r, (size_t)(n * D))};
    auto go = [&](Backend& be, bool fused) {
        std::unique_ptr<SeqState> st = be.new_seq_state(shape);
        std::vector<Words> o = run_bufs(be, ins, {(size_t)(n * H * D), (size_t)(n * D)},
                                        [&](std::vector<Dev<float>>& in, std::vector<Dev<float>>& out) {
                                            be.copy(out[0], Dev<const float>(in[0]), n * H * D);
                                            be.copy(out[1], Dev<const float>(in[1]), n * D);
                                            if (fused) {
                                                be.attention_inputs(*st, il, p0, n, out[0], H, out[1],
                                                                    L.attn_kv_a_norm, D, hp.rms_eps, rope, true,
                                                                    hp.n_rot);
                                            } else {
                                                be.Backend::attention_inputs(*st, il, p0, n, out[0], H, out[1],
                                                                             L.attn_kv_a_norm, D, hp.rms_eps, rope,
                                                                             true, hp.n_rot);
                                            }
                                        });
        for (const std::vector<float>& a : st->to_image().arrays) o[1].insert(o[1].end(), a.begin(), a.end());
        return o;
    };
    const std::vector<Words> ya = go(c.a, true), yb = go(c.b, true), yb2 = go(c.b, false);
    const bool ok = yb[1].size() == yb2[1].size() &&
                    std::memcmp(yb[0].data(), yb2[0].data(), yb[0].size() * 4) == 0 &&
                    std::memcmp(yb[1].data(), yb2[1].data(), yb[1].size() * 4) == 0;
    const std::string note = ok ? "" : "backend B differs from its six calls (rms_norm, rope_tail, FP8, kv_store)";
    c.record("attention_inputs", "query heads", "F32", (int)n, D, ya[0], yb[0], ok, note);
    if (ya[1].size() != yb[1].size()) throw std::logic_error("attention_inputs: the two backends' state images differ in length");
    c.record("attention_inputs_kv", L.attn_kv_a_norm.name + " (kv, state)", "F32", (int)n, D, ya[1], yb[1], ok, note);
}

}  // namespace

void compare_model_ops(Backend& a, Backend& b, const Ds4Model& model, uint64_t seed, std::vector<CompareRecord>& out) {
    Cases c{a, b, model, seed, out};
    embed_case(c);
    rope_cases(c);
    rounding_cases(c);
    add_and_top_k_cases(c);
    hc_cases(c);
    route_cases(c);
    moe_case(c);
    attention_inputs_case(c);
}

}  // namespace ds4
