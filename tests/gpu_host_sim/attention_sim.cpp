// gpu_attention.cu's kernels (Backend::attention and attention_rows on the GPU) run on the host
// (sim_runtime.h) against a serial statement of the order the file's header gives: each score
// one fma chain from +0 a range of 128 of the head's values, the chains added in order, then chunks of 64 keys (maximum, weights, sum and
// weighted values in key order), combined in chunk order with the sink. Every output must be bit
// for bit the statement's for every head group (64, 16, 8, 4, 1 heads a block, where they divide
// the heads) and for one token a launch as for all of them; the statement itself must stay
// within 1e-12 of a plain float64 softmax. Cases: the real model's rows (64 heads of 512), head
// sizes that are no multiple of 4 or 16, a wrapping ring with compressed rows all visible or the
// indexer's selection, float rows (attention_rows), a chunk cut short, tokens past the first
// chunk, a key with no chunk (zeros). With RoPE on, the head groups must still agree bit for bit.
// Prints one line per case; exit status 1 if any differs.
// tests/engine/test_gpu_kernels_host_sim.py builds and runs it.
#include "sim_runtime.h"
#include "sim_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/gpu_attention.cu"

namespace {

int failures = 0;

struct Case {
    std::string name;
    int64_t n = 2, H = 8, D = 64;
    bool rows_mode = false;  // attention_rows: T float rows
    int64_t T = 100;         // rows mode
    int64_t p0 = 70, ring_rows = 80, n_swa = 64, ratio = 0, n_comp = 0, top_k = 0;  // state mode
    int64_t n_rot = 0;
    double key_scale = 0.3;
};

// The keys token i sees, as floats (F16 keys widened), in attention order.
std::vector<const void*> keys_of(const Case& c, const Keys& k, int64_t i) {
    const TokenKeys tk = token_keys(k, i, c.p0 + i);
    std::vector<const void*> rows;
    if (c.rows_mode) {
        for (int64_t t = 0; t < c.T; ++t) rows.push_back(k.rows + t * c.D);
    } else {
        for (int64_t t = 0; t < tk.nwin + tk.ncomp; ++t) rows.push_back(tk.f16_row(t, c.D));
    }
    return rows;
}

double key_at(const Case& c, const void* row, int64_t d) {
    return c.rows_mode ? (double)((const float*)row)[d] : (double)ds4::f16_to_f32(((const uint16_t*)row)[d]);
}

// A head's chunks as the statement computes them: maxima, sums, weighted values [chunk][D].
struct Chunks {
    std::vector<double> m, l, o;
};

// The order of the header, serially, for (token i, head h): its chunks, out (float, before
// RoPE), and a plain float64 softmax with the sink, for the statement's own check: returns the
// largest difference of the statement's doubles from it, relative to the row's largest value.
double stated(const Case& c, const Keys& k, const std::vector<float>& Q, const std::vector<float>& sinks, int64_t i,
              int64_t h, Chunks& ch_out, float* out, double* plain) {
    const std::vector<const void*> rows = keys_of(c, k, i);
    const int64_t T = (int64_t)rows.size(), D = c.D;
    const float* q = Q.data() + (i * c.H + h) * D;
    std::vector<double> s((size_t)T);
    for (int64_t t = 0; t < T; ++t) {
        double sum = 0.0;  // one fma chain from +0 a range of 128 values of d, the chains added in order
        for (int64_t r0 = 0; r0 < D; r0 += 128) {
            double a = 0.0;
            for (int64_t d = r0; d < std::min<int64_t>(D, r0 + 128); ++d) a = std::fma((double)q[d], key_at(c, rows[t], d), a);
            sum = r0 == 0 ? a : sum + a;
        }
        s[t] = sum * (1.0 / std::sqrt((double)D));
    }
    const int64_t nch = (T + 63) / 64;
    std::vector<double> m(nch), l(nch), o((size_t)(nch * D));
    for (int64_t ch = 0; ch < nch; ++ch) {
        const int64_t k0 = ch * 64, kt = std::min<int64_t>(64, T - k0);
        double mx = -INFINITY;
        for (int64_t t = 0; t < kt; ++t) mx = ds4::num::max_f64(mx, s[k0 + t]);
        double sum = 0.0;
        std::vector<double> e((size_t)kt);
        for (int64_t t = 0; t < kt; ++t) e[t] = std::exp(s[k0 + t] - mx), sum += e[t];
        for (int64_t j = 0; j < D; ++j) {
            double a = 0.0;
            for (int64_t t = 0; t < kt; ++t) a = std::fma(e[t], key_at(c, rows[k0 + t], j), a);
            o[ch * D + j] = a;
        }
        m[ch] = mx, l[ch] = sum;
    }
    double M = (double)sinks[h];
    for (int64_t ch = 0; ch < nch; ++ch) M = ds4::num::max_f64(M, m[ch]);
    double den = std::exp((double)sinks[h] - M);
    std::vector<double> acc((size_t)D, 0.0);
    for (int64_t ch = 0; ch < nch; ++ch) {
        const double w = std::exp(m[ch] - M);
        den = std::fma(w, l[ch], den);
        for (int64_t j = 0; j < D; ++j) acc[j] = std::fma(w, o[ch * D + j], acc[j]);
    }
    for (int64_t j = 0; j < D; ++j) out[j] = (float)(acc[j] / den);
    ch_out = Chunks{m, l, o};
    double pm = (double)sinks[h];
    for (double v : s) pm = std::max(pm, v);
    double pden = std::exp((double)sinks[h] - pm);
    for (double v : s) pden += std::exp(v - pm);
    for (int64_t j = 0; j < D; ++j) {
        double a = 0.0;
        for (int64_t t = 0; t < T; ++t) a += std::exp(s[t] - pm) * key_at(c, rows[t], j);
        plain[j] = a / pden;
    }
    double worst = 0.0, top = 0.0;
    for (int64_t j = 0; j < D; ++j) top = std::max(top, std::fabs(plain[j]));
    for (int64_t j = 0; j < D; ++j) worst = std::max(worst, std::fabs(acc[j] / den - plain[j]) / (top + 1e-300));
    return worst;
}

// The launcher's calls (gpu_attention.cu launch_attention), for head group HG and `tokens` a launch.
// Whether the launch's partial sums of tokens i0 .. i0 + m are bit for bit the statement's chunks.
bool same_parts(const Case& c, const std::vector<Chunks>& want, int64_t i0, int64_t m, int64_t nch,
                const double* part_o, const double* part_ml, const std::string& what) {
    for (int64_t il = 0; il < m; ++il) {
        for (int64_t h = 0; h < c.H; ++h) {
            const Chunks& w = want[(size_t)((i0 + il) * c.H + h)];
            const int64_t row = il * c.H + h;
            for (size_t ch = 0; ch < w.m.size(); ++ch) {
                const double* ml = part_ml + (row * nch + (int64_t)ch) * 2;
                const double* o = part_o + (row * nch + (int64_t)ch) * c.D;
                bool ok = std::memcmp(&ml[0], &w.m[ch], 8) == 0 && std::memcmp(&ml[1], &w.l[ch], 8) == 0;
                for (int64_t j = 0; ok && j < c.D; ++j) ok = std::memcmp(&o[j], &w.o[ch * c.D + j], 8) == 0;
                if (!ok) {
                    std::printf("FAIL %s: %s: token %ld head %ld chunk %zu differs from the statement\n",
                                c.name.c_str(), what.c_str(), (long)(i0 + il), (long)h, ch);
                    ++failures;
                    return false;
                }
            }
        }
    }
    return true;
}

template <int HG>
bool run_kernels(const Case& c, const Keys& k, const std::vector<float>& Q, const std::vector<float>& sinks,
                 int64_t most, int64_t tokens, const std::vector<Chunks>& want, std::vector<float>& O) {
    const std::string what = std::to_string(HG) + " heads a block, " + std::to_string(tokens) + " tokens a launch";
    bool ok = true;
    const int64_t nch = chunks_of(most);
    std::vector<double> part((size_t)(tokens * c.H * nch * (c.D + 2)), std::nan(""));
    const ds4::gpu::StepPos pos = ds4::gpu::absolute_pos(c.p0);
    ds4::RopeSpec rope;
    rope.n_rot = c.n_rot;
    double* part_o = part.data();
    double* part_ml = part.data() + tokens * c.H * nch * c.D;
    const int v4 = c.D % 4 == 0 ? 1 : 0;
    for (int64_t i0 = 0; i0 < c.n; i0 += tokens) {
        const int64_t m = std::min(tokens, c.n - i0);
        if (nch) {
            sim_launch((unsigned)(m * (c.H / HG)), (unsigned)nch, kThreads, [&] {
                attention_group_kernel(HG)(k, pos, i0, Q.data(), c.H, c.D, nch, v4, part_o, part_ml);
            });
            ok = ok && same_parts(c, want, i0, m, nch, part_o, part_ml, what);
        }
        sim_launch((unsigned)(m * c.H), 1, kThreads, [&] {
            ds4_attention_combine_kernel(k, pos, i0, c.H, c.D, sinks.data(), rope, nch, part_o, part_ml, O.data());
        });
    }
    return ok;
}

void run(const Case& c) {
    std::mt19937_64 rng(std::hash<std::string>()(c.name));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t D = c.D;
    std::vector<float> Q((size_t)(c.n * c.H * D)), sinks((size_t)c.H), frows;
    for (float& v : Q) v = nd(rng);
    for (float& v : sinks) v = nd(rng);
    std::vector<uint16_t> ring, comp;
    std::vector<int32_t> selected;
    Keys k{};
    int64_t most = 0;
    if (c.rows_mode) {
        frows.resize((size_t)(c.T * D));
        for (float& v : frows) v = (float)(nd(rng) * c.key_scale);
        k.rows = frows.data(), k.T = c.T;
        most = std::max<int64_t>(c.T, 1);
    } else {
        ring.resize((size_t)(c.ring_rows * D));
        for (uint16_t& v : ring) v = ds4::f32_to_f16((float)(nd(rng) * c.key_scale));
        k.ring = ring.data(), k.ring_rows = c.ring_rows, k.n_swa = c.n_swa;
        const int64_t end = c.p0 + c.n;
        most = std::min(c.n_swa, end);
        if (c.ratio) {
            comp.resize((size_t)(std::max<int64_t>(end / c.ratio, 1) * D));  // every row the call may see
            for (uint16_t& v : comp) v = ds4::f32_to_f16((float)(nd(rng) * c.key_scale));
            k.comp = comp.data(), k.ratio = c.ratio;
            const int64_t visible_end = end / c.ratio;
            if (c.top_k) {
                selected.resize((size_t)(c.n * c.top_k));
                std::uniform_int_distribution<int32_t> pick(0, (int32_t)std::max<int64_t>(visible_end - 1, 0));
                for (int32_t& v : selected) v = pick(rng);
                k.selected = selected.data(), k.top_k = c.top_k;
                most += std::min(visible_end, c.top_k);
            } else {
                most += visible_end;
            }
        }
    }
    // The statement (no RoPE: the rotation is the combine's, unchanged, and checked by the groups' agreement).
    std::vector<float> want((size_t)(c.n * c.H * D));
    std::vector<Chunks> chunks((size_t)(c.n * c.H));
    double worst = 0.0;
    std::vector<double> plain((size_t)D);
    for (int64_t i = 0; i < c.n; ++i) {
        for (int64_t h = 0; h < c.H; ++h) {
            float* w = want.data() + (i * c.H + h) * D;
            worst = std::max(worst, stated(c, k, Q, sinks, i, h, chunks[(size_t)(i * c.H + h)], w, plain.data()));
        }
    }
    bool ok = true;
    int runs = 0;
    auto check = [&](int hg, int64_t tokens, bool parts_ok, const std::vector<float>& got) {
        const std::string what = std::to_string(hg) + " heads a block, " + std::to_string(tokens) + " tokens a launch";
        ++runs;
        if (runs == 1 && c.n_rot) want = got;  // with RoPE (not stated): every run against the first
        ok = parts_ok && same_floats(failures, c.name, what.c_str(), got, want) && ok;
    };
    for (int64_t tokens : {c.n, (int64_t)1}) {
        std::vector<float> O((size_t)(c.n * c.H * D), std::nanf(""));
        if (c.H % 64 == 0) check(64, tokens, run_kernels<64>(c, k, Q, sinks, most, tokens, chunks, O), O);
        if (c.H % 16 == 0) check(16, tokens, run_kernels<16>(c, k, Q, sinks, most, tokens, chunks, O), O);
        if (c.H % 8 == 0) check(8, tokens, run_kernels<8>(c, k, Q, sinks, most, tokens, chunks, O), O);
        if (c.H % 4 == 0) check(4, tokens, run_kernels<4>(c, k, Q, sinks, most, tokens, chunks, O), O);
        check(1, tokens, run_kernels<1>(c, k, Q, sinks, most, tokens, chunks, O), O);
    }
    if (!(worst < 1e-12)) {
        std::printf("FAIL %s: the statement is %.3g from a plain float64 softmax\n", c.name.c_str(), worst);
        ++failures, ok = false;
    }
    if (ok) std::printf("ok   %s (%d runs, statement within %.2g of float64)\n", c.name.c_str(), runs, worst);
}

}  // namespace

int main() {
    run({"model rows: 64 heads of 512, a 2-chunk window", 1, 64, 512});
    Case c{"3 tokens of 16 heads of 36 (no multiple of 16), window and all compressed rows", 3, 16, 36};
    c.ratio = 4, c.n_comp = 40, c.p0 = 150, c.ring_rows = 70, c.n_swa = 64;
    run(c);
    c = {"2 tokens of 8 heads of 100, the indexer's selection of 70, a wrapping ring", 2, 8, 100};
    c.ratio = 4, c.n_comp = 60, c.top_k = 70, c.p0 = 300, c.ring_rows = 40, c.n_swa = 32;
    run(c);
    c = {"first tokens: fewer keys than a chunk, 4 heads of 64", 3, 4, 64};
    c.p0 = 0;
    run(c);
    c = {"rows mode: 130 float rows (a chunk of 2), 2 tokens of 8 heads of 128", 2, 8, 128};
    c.rows_mode = true, c.T = 130;
    run(c);
    c = {"rows mode: no row (zeros)", 2, 4, 32};
    c.rows_mode = true, c.T = 0;
    run(c);
    c = {"6 heads (only groups of 1), 2 tokens of 20", 2, 6, 20};
    c.ratio = 128, c.n_comp = 3, c.p0 = 400, c.ring_rows = 64, c.n_swa = 64;
    run(c);
    c = {"large scores: keys x 40", 2, 16, 64};
    c.key_scale = 40.0;
    run(c);
    c = {"64 heads of 300: three ranges of d, the last cut short, all compressed rows", 2, 64, 300};
    c.ratio = 4, c.n_comp = 50, c.p0 = 120;
    run(c);
    c = {"16 heads of 200 (two ranges), the indexer's selection, a wrapping ring", 2, 16, 200};
    c.ratio = 4, c.n_comp = 80, c.top_k = 40, c.p0 = 350, c.ring_rows = 48, c.n_swa = 40;
    run(c);
    c = {"RoPE on: 64 heads of 128, 32 rotated, groups agree", 2, 64, 128};
    c.n_rot = 32, c.ratio = 4, c.n_comp = 30, c.p0 = 100;
    run(c);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
