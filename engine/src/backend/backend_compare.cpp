// Backend comparison harness (backend_compare.h).
#include "backend/backend_compare.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_compare_detail.h"
#include "model/ds4_model.h"
#include "quant/quant_types.h"

namespace ds4 {

namespace {

using namespace compare_detail;
constexpr int kMaxCols = 8;

struct Ctx {
    Ctx(Backend& a_, Backend& b_, uint64_t seed_) : a(a_), b(b_), seed(seed_) {}
    Backend& a;
    Backend& b;
    uint64_t seed;
    uint64_t case_no = 0;
    std::vector<CompareRecord> out;

    std::mt19937_64 rng_for_case() { return std::mt19937_64(seed * 0x9E3779B97F4A7C15ull + ++case_no); }
};

std::vector<float> run_matmul(Backend& be, const WeightView& W, int64_t row0, int64_t rows, const std::vector<float>& X,
                              int64_t ldx, int col0, int ncols, int64_t ldy) {
    return through_seam(be, X, (size_t)ncols * (size_t)ldy, [&](Dev<float> x, Dev<float> y) {
        be.matmul(W, row0, rows, Dev<const float>(x + (int64_t)col0 * ldx), ldx, ncols, y, ldy);
    });
}

void matmul_case(Ctx& c, const WeightView& W, int64_t row0, int64_t rows, int ncols) {
    std::mt19937_64 rng = c.rng_for_case();
    const bool padded = c.case_no % 2 == 1;  // odd cases: strides longer than a column
    const int64_t ldx = W.n_in() + (padded ? 3 : 0);
    const int64_t ldy = rows + (padded ? 5 : 0);
    const std::vector<float> X = random_input(rng, (size_t)ncols * (size_t)ldx);
    CompareRecord rec;
    rec.op = "matmul";
    rec.tensor = W.name;
    rec.type = type_name(W.type);
    rec.ncols = ncols;
    rec.row0 = row0;
    rec.rows = rows;
    const std::vector<float> ya = run_matmul(c.a, W, row0, rows, X, ldx, 0, ncols, ldy);
    const std::vector<float> yb = run_matmul(c.b, W, row0, rows, X, ldx, 0, ncols, ldy);
    measure(ya, yb, [&](size_t i) { return (int64_t)(i % (size_t)ldy) < rows; }, rec);
    // Verify == decode on B: each column alone (ncols = 1 over the same input) gives the same
    // bits; for ncols = 1 a second run checks run-to-run determinism.
    rec.bitwise_cols_ok = true;
    for (int col = 0; col < ncols && rec.bitwise_cols_ok; ++col) {
        const std::vector<float> y1 = run_matmul(c.b, W, row0, rows, X, ldx, col, 1, ldy);
        for (int64_t r = 0; r < rows; ++r) {
            if (!same_bits(y1[(size_t)r], yb[(size_t)col * (size_t)ldy + (size_t)r])) {
                rec.bitwise_cols_ok = false;
                if (rec.note.empty()) {
                    rec.note = "column " + std::to_string(col) + " row " + std::to_string(r) +
                               " differs from the same column computed alone";
                }
                break;
            }
        }
    }
    c.out.push_back(rec);
}

// n_groups groups of the matrix's rows, each on its own slice of every column (the grouped
// output projection), A against B; on B the one call must give the bits of the per-group
// matmul calls the seam's default makes.
void grouped_matmul_case(Ctx& c, const WeightView& W, int64_t n_groups, int ncols) {
    std::mt19937_64 rng = c.rng_for_case();
    const int64_t group_rows = W.n_rows() / n_groups, rows = n_groups * group_rows;
    const int64_t x_stride = W.n_in() + 1, ldx = n_groups * x_stride + 2, ldy = rows + 3;  // odd: unaligned slices too
    const std::vector<float> X = random_input(rng, (size_t)ncols * (size_t)ldx);
    CompareRecord rec;
    rec.op = "matmul_grouped";
    rec.tensor = W.name;
    rec.type = type_name(W.type);
    rec.ncols = ncols;
    rec.rows = rows;
    auto grouped = [&](Backend& be) {
        return through_seam(be, X, (size_t)ncols * (size_t)ldy, [&](Dev<float> x, Dev<float> y) {
            be.matmul_grouped(W, n_groups, group_rows, Dev<const float>(x), x_stride, ldx, ncols, y, ldy);
        });
    };
    const std::vector<float> ya = grouped(c.a), yb = grouped(c.b);
    measure(ya, yb, [&](size_t i) { return (int64_t)(i % (size_t)ldy) < rows; }, rec);
    // The seam's default (per-group matmul calls), called past B's override.
    const std::vector<float> y_calls = through_seam(c.b, X, (size_t)ncols * (size_t)ldy, [&](Dev<float> x, Dev<float> y) {
        c.b.Backend::matmul_grouped(W, n_groups, group_rows, Dev<const float>(x), x_stride, ldx, ncols, y, ldy);
    });
    rec.bitwise_cols_ok = true;
    for (size_t i = 0; i < yb.size() && rec.bitwise_cols_ok; ++i) {
        if (!same_bits(yb[i], y_calls[i])) {
            rec.bitwise_cols_ok = false;
            rec.note = "output " + std::to_string(i) + " differs from the per-group matmul calls";
        }
    }
    c.out.push_back(rec);
}

std::vector<float> run_rms_norm(Backend& be, const std::vector<float>& X, const WeightView* w, int64_t n,
                                int64_t row_first, int64_t n_rows) {
    return through_seam(be, X, (size_t)(n_rows * n), [&](Dev<float> x, Dev<float> y) {
        be.rms_norm(Dev<const float>(x + row_first * n), w, n, n_rows, 1e-6, y);
    });
}

void rms_norm_case(Ctx& c, const WeightView* w, int64_t n, int64_t n_rows) {
    std::mt19937_64 rng = c.rng_for_case();
    const std::vector<float> X = random_input(rng, (size_t)(n_rows * n));
    CompareRecord rec;
    rec.op = "rms_norm";
    rec.tensor = w ? w->name : "";
    rec.type = w ? type_name(w->type) : "F32";
    rec.ncols = (int)n_rows;
    rec.rows = n;
    const std::vector<float> ya = run_rms_norm(c.a, X, w, n, 0, n_rows);
    const std::vector<float> yb = run_rms_norm(c.b, X, w, n, 0, n_rows);
    measure(ya, yb, [](size_t) { return true; }, rec);
    rec.bitwise_cols_ok = true;
    for (int64_t r = 0; r < n_rows && rec.bitwise_cols_ok; ++r) {
        const std::vector<float> y1 = run_rms_norm(c.b, X, w, n, r, 1);
        for (int64_t i = 0; i < n; ++i) {
            if (!same_bits(y1[(size_t)i], yb[(size_t)(r * n + i)])) {
                rec.bitwise_cols_ok = false;
                rec.note = "row " + std::to_string(r) + " differs from the same row normalised alone";
                break;
            }
        }
    }
    c.out.push_back(rec);
}

void elementwise_cases(Ctx& c) {
    const int64_t n = 1000;
    for (const char* op : {"scale", "copy"}) {
        std::mt19937_64 rng = c.rng_for_case();
        const std::vector<float> X = random_input(rng, (size_t)n);
        const bool is_scale = op[0] == 's';
        auto run = [&](Backend& be) {
            return through_seam(be, X, (size_t)n, [&](Dev<float> x, Dev<float> y) {
                be.copy(y, Dev<const float>(x), n);
                if (is_scale) be.scale(y, n, 0.7071067811865476);
            });
        };
        CompareRecord rec;
        rec.op = op;
        rec.type = "F32";
        rec.ncols = 1;
        rec.rows = n;
        const std::vector<float> ya = run(c.a), yb = run(c.b);
        measure(ya, yb, [](size_t) { return true; }, rec);
        const std::vector<float> yb2 = run(c.b);  // run to run on B
        rec.bitwise_cols_ok = std::memcmp(yb.data(), yb2.data(), (size_t)n * sizeof(float)) == 0;
        c.out.push_back(rec);
    }
}

// Every type the engine has kernels for (the GPU backend decodes each of them).
bool b_matmul_type(uint32_t type) {
    const QTypeTraits* t = qtype_traits(type);
    return t && t->kernels;
}

}  // namespace

std::vector<CompareRecord> compare_backends(const std::string& model_path, const std::string& backend_a,
                                            const std::string& backend_b, uint64_t seed) {
    // The model (on the CPU, threads 1: its own backend is not used) only supplies the table.
    const Ds4Model model(model_path, 1, "cpu");
    const WeightTable& table = model.weights_table();
    std::unique_ptr<Backend> a = make_backend(backend_a, 0);
    std::unique_ptr<Backend> b = make_backend(backend_b, 0);
    a->bind_weights(table);
    b->bind_weights(table);
    Ctx c(*a, *b, seed);

    for (const WeightView& W : table.views) {
        if (!W.present() || W.vector || W.ne[2] != 1 || W.ne[3] != 1 || W.ne[1] < 1 || !b_matmul_type(W.type)) continue;
        const int64_t R = W.n_rows();
        for (int ncols = 1; ncols <= kMaxCols; ++ncols) matmul_case(c, W, 0, R, ncols);
        // Row ranges: an inner span, the last row alone.
        if (R > 2) {
            const int64_t len = R - 2 < 37 ? R - 2 : 37;
            matmul_case(c, W, 1, len, 1);
            matmul_case(c, W, 1, len, 5);
        }
        if (R > 1) matmul_case(c, W, R - 1, 1, 7);  // 7 columns: a 4-group and a 3-group
        if (W.name.find("attn_output_a") != std::string::npos && R % 4 == 0) {
            for (int ncols : {1, 3}) grouped_matmul_case(c, W, 4, ncols);
        }
    }

    std::vector<int64_t> lengths;
    for (const WeightView& w : table.views) {
        if (!w.present() || !w.vector || w.name.find("norm") == std::string::npos) continue;
        for (int64_t n_rows : {1, 3, 8}) rms_norm_case(c, &w, w.n_elements(), n_rows);
        bool seen = false;
        for (int64_t n : lengths) seen = seen || n == w.n_elements();
        if (!seen) lengths.push_back(w.n_elements());
    }
    for (int64_t n : lengths) {
        for (int64_t n_rows : {1, 3, 8}) rms_norm_case(c, nullptr, n, n_rows);
    }
    elementwise_cases(c);
    compare_model_ops(*a, *b, model, seed, c.out);
    return c.out;
}

}  // namespace ds4
