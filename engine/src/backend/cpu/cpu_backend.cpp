// CPU backend: memory, weight binding, matmul, norms, RoPE, roundings;
// the factory. The other parts of the class live in the files cpu_backend.h lists.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_api.h"
#include "backend/cpu/cpu_moe.h"
#include "backend/cpu/cpu_numerics.h"
#include "common/error.h"
#include "quant/quant_dot.h"

namespace ds4 {

double cpu_sigmoid(double x) {
    // Two branches so neither exp overflows.
    if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
    const double e = std::exp(x);
    return e / (1.0 + e);
}

void cpu_rms_norm_row(const float* x, const float* w, int64_t n, double eps, float* y) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += (double)x[i] * (double)x[i];
    const double s = 1.0 / std::sqrt(ss / (double)n + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = (float)((double)x[i] * s * (w ? (double)w[i] : 1.0));
}

void cpu_rope_cos_sin(double pos, const RopeSpec& spec, double* cs) {
    rope_angles(pos, spec, cs);  // angle i lands in cs[i]; expand from the top so none is overwritten early
    for (int64_t i = spec.n_rot / 2 - 1; i >= 0; --i) {
        const double t = cs[i];
        cs[2 * i] = std::cos(t);
        cs[2 * i + 1] = std::sin(t);
    }
}

void cpu_rope_row(float* x, int64_t row_len, const double* cs, int64_t n_rot, bool inverse) {
    float* tail = x + (row_len - n_rot);
    for (int64_t i = 0; i < n_rot / 2; ++i) {
        const double c = cs[2 * i], s = inverse ? -cs[2 * i + 1] : cs[2 * i + 1];
        const double x0 = tail[2 * i], x1 = tail[2 * i + 1];
        tail[2 * i] = (float)(x0 * c - x1 * s);
        tail[2 * i + 1] = (float)(x0 * s + x1 * c);
    }
}

void cpu_indexer_transform_row(float* row, int64_t d, bool fp4, std::vector<double>& tmp) {
    tmp.resize((size_t)d);
    for (int64_t i = 0; i < d; ++i) tmp[(size_t)i] = row[i];
    hadamard_inplace(tmp.data(), d);
    for (int64_t i = 0; i < d; ++i) row[i] = (float)tmp[(size_t)i];
    if (fp4) fp4_e2m1_round_trip(row, d);
}

std::string CpuBackend::name() const { return std::string("cpu(") + quant_dispatch_name() + ")"; }

namespace {

// Host memory, 64-byte aligned (the AVX-512 kernels' loads), zero-filled.
class CpuBuffer final : public DeviceBuffer {
public:
    explicit CpuBuffer(size_t bytes) : bytes_(bytes) {
        const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
        data_ = std::aligned_alloc(64, rounded);
        if (!data_) throw ArgumentError("cpu backend: cannot allocate " + std::to_string(bytes) + " bytes");
        std::memset(data_, 0, rounded);
    }
    ~CpuBuffer() override { std::free(data_); }
    void* data() const override { return data_; }
    size_t bytes() const override { return bytes_; }

private:
    void* data_ = nullptr;
    size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<DeviceBuffer> CpuBackend::alloc(size_t bytes) { return std::make_unique<CpuBuffer>(bytes); }

void CpuBackend::upload(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

void CpuBackend::download(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

void CpuBackend::bind_weights(const WeightTable& table) {
    vectors_.assign(table.views.size(), {});
    for (const WeightView& w : table.views) {
        if (!w.vector) continue;
        std::vector<float>& v = vectors_[(size_t)w.id];
        v.resize((size_t)w.n_elements());
        for (int64_t r = 0; r < w.n_rows(); ++r) {
            dequantize_row(w.type, w.row(r), v.data() + r * w.n_in(), w.n_in(), w.name.c_str());
        }
    }
}

const float* CpuBackend::vec(const WeightView& w) const {
    if (w.id < 0 || (size_t)w.id >= vectors_.size() || !w.vector) {
        throw ArgumentError("cpu backend: tensor '" + w.name + "' is not a vector view bound to this backend");
    }
    return vectors_[(size_t)w.id].data();
}

void CpuBackend::embed(const WeightView& table, Dev<const int32_t> tokens, int64_t n, int64_t n_copies,
                       Dev<float> X) {
    const int64_t E = table.n_in();
    const int32_t* tok = tokens.get();
    for (int64_t i = 0; i < n; ++i) {
        if (tok[i] < 0 || tok[i] >= table.n_rows()) {
            throw ArgumentError("embed: token id " + std::to_string(tok[i]) + " outside tensor '" + table.name +
                                "' (" + std::to_string(table.n_rows()) + " rows)");
        }
        float* Xi = X.get() + i * n_copies * E;
        dequantize_row(table.type, table.row(tok[i]), Xi, E, table.name.c_str());
        for (int64_t h = 1; h < n_copies; ++h) std::copy(Xi, Xi + E, Xi + h * E);
    }
}

void CpuBackend::matmul(const WeightView& W, int64_t row0, int64_t n_rows, Dev<const float> X, int64_t ldx,
                        int ncols, Dev<float> Y, int64_t ldy) {
    matmul_host(W, row0, n_rows, X.get(), ldx, ncols, Y.get(), ldy);
}

void CpuBackend::matmul_host(const WeightView& W, int64_t row0, int64_t n_rows, const float* X, int64_t ldx,
                             int ncols, float* Y, int64_t ldy) {
    if (row0 < 0 || n_rows < 0 || row0 + n_rows > W.n_rows()) {
        throw ArgumentError("tensor '" + W.name + "': rows " + std::to_string(row0) + ".." +
                            std::to_string(row0 + n_rows) + " outside its " + std::to_string(W.n_rows()) + " rows");
    }
    const int64_t n = W.n_in();
    // Each output element is one dot_row_cols reduction: the split over rows
    // cannot change any value.
    pool_.parallel_for(n_rows, 8, [&](int64_t b, int64_t e) {
        matmul_rows(W.type, W.row(row0 + b), (int64_t)W.row_bytes, e - b, X, ldx, ncols, Y + b, ldy, n,
                    W.name.c_str());
    });
}

void CpuBackend::rms_norm(Dev<const float> x, const WeightView* w, int64_t n, int64_t n_rows, double eps,
                          Dev<float> y) {
    rms_norm_host(x.get(), w ? vec(*w) : nullptr, n, n_rows, eps, y.get());
}

void CpuBackend::rms_norm_host(const float* x, const float* w, int64_t n, int64_t n_rows, double eps, float* y) {
    pool_.parallel_for(n_rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) cpu_rms_norm_row(x + r * n, w, n, eps, y + r * n);
    });
}

void CpuBackend::scale(Dev<float> x, int64_t n, double s) {
    float* p = x.get();
    for (int64_t k = 0; k < n; ++k) p[k] = (float)(p[k] * s);
}

void CpuBackend::add(Dev<float> yd, Dev<const float> xd, int64_t n) {
    float* y = yd.get();
    const float* x = xd.get();
    for (int64_t k = 0; k < n; ++k) y[k] = y[k] + x[k];
}

void CpuBackend::copy(Dev<float> dst, Dev<const float> src, int64_t n) {
    std::memcpy(dst.get(), src.get(), (size_t)n * sizeof(float));
}

void CpuBackend::copy_ids(Dev<int32_t> dst, Dev<const int32_t> src, int64_t n) {
    if (n > 0) std::memcpy(dst.get(), src.get(), (size_t)n * sizeof(int32_t));
}

void CpuBackend::row_top_k(Dev<const float> xd, int64_t n_rows, int64_t n, int64_t k, Dev<int32_t> idsd,
                           Dev<float> valsd) {
    check_row_top_k("cpu", n_rows, n, k);
    const float* x = xd.get();
    pool_.parallel_for(n_rows, 1, [&](int64_t b, int64_t e) {
        std::vector<uint64_t> words((size_t)n);
        for (int64_t r = b; r < e; ++r) {
            const float* row = x + r * n;
            for (int64_t i = 0; i < n; ++i) words[(size_t)i] = rank_word(row[i], i);
            std::partial_sort(words.begin(), words.begin() + k, words.end(), std::greater<uint64_t>());
            for (int64_t j = 0; j < k; ++j) {
                const int64_t i = rank_word_index(words[(size_t)j]);
                idsd.get()[r * k + j] = (int32_t)i;
                valsd.get()[r * k + j] = row[i];
            }
        }
    });
}

void CpuBackend::rope_tail(Dev<float> xd, int64_t n_tokens, int64_t rows_per_token, int64_t row_len, int64_t pos0,
                           const RopeSpec& spec, bool inverse) {
    float* x = xd.get();
    pool_.parallel_for(n_tokens, 1, [&](int64_t b, int64_t e) {
        std::vector<double>& cs = scratch().rope_cs;
        cs.resize((size_t)spec.n_rot);
        for (int64_t i = b; i < e; ++i) {
            cpu_rope_cos_sin((double)(pos0 + i), spec, cs.data());
            for (int64_t r = 0; r < rows_per_token; ++r) {
                cpu_rope_row(x + (i * rows_per_token + r) * row_len, row_len, cs.data(), spec.n_rot, inverse);
            }
        }
    });
}

void CpuBackend::fp8_kv_round_trip(Dev<float> xd, int64_t n_rows, int64_t n, int64_t n_rot) {
    float* x = xd.get();
    pool_.parallel_for(n_rows, 1, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) fp8_e4m3_round_trip(x + r * n, n - n_rot);
    });
}

void CpuBackend::indexer_transform(Dev<float> xd, int64_t n_rows, int64_t d, bool fp4) {
    float* x = xd.get();
    pool_.parallel_for(n_rows, 1, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) cpu_indexer_transform_row(x + r * d, d, fp4, scratch().d0);
    });
}

void CpuBackend::moe(const MoeWeights& mw, Dev<const float> h, int64_t n_tokens, Dev<const int32_t> experts,
                     Dev<const float> weights, int64_t n_used, double clamp, double clamp_shared, Dev<float> y) {
    cpu_moe(pool_, mw, h.get(), n_tokens, experts.get(), weights.get(), n_used, clamp, clamp_shared, y.get());
}

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace ds4
