// Helpers the backend comparison cases share (backend_compare.cpp, backend_compare_ops.cpp):
// poisoned outputs, random inputs, the one-buffer seam round trip, and the error measure.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_compare.h"
#include "quant/quant_types.h"

namespace ds4 {
namespace compare_detail {

constexpr uint32_t kPoison = 0x7fa5a5a5u;  // a NaN no kernel computes: "never written"

inline bool is_poison(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u == kPoison;
}

inline float poison() {
    float f;
    std::memcpy(&f, &kPoison, 4);
    return f;
}

inline std::string type_name(uint32_t type) {
    const QTypeTraits* t = qtype_traits(type);
    return t ? t->name : "type " + std::to_string(type);
}

// Inputs: normal values at a per-case magnitude, fresh for every case.
inline std::vector<float> random_input(std::mt19937_64& rng, size_t n) {
    std::normal_distribution<double> nd;
    std::uniform_real_distribution<double> mag(-3.0, 3.0);
    const double s = std::pow(10.0, mag(rng) / 3.0);  // 0.1 .. 10
    std::vector<float> x(n);
    for (float& v : x) {
        v = (float)(nd(rng) * s);
        if (v == 0.0f) v = 1.0f;
    }
    return x;
}

// The full seam on one backend: alloc, upload input and poisoned output, op, download,
// synchronize. `op` enqueues the operation on (input, output) device pointers.
template <class Op>
inline std::vector<float> through_seam(Backend& be, const std::vector<float>& in, size_t out_n, Op op) {
    auto bin = be.alloc(in.size() * sizeof(float));
    auto bout = be.alloc(out_n * sizeof(float));
    std::vector<float> out(out_n, poison());
    be.upload(bin->as<float>(), in.data(), (int64_t)in.size());
    be.upload(bout->as<float>(), out.data(), (int64_t)out_n);
    op(bin->as<float>(), bout->as<float>());
    be.download(out.data(), Dev<const float>(bout->as<float>()), (int64_t)out_n);
    be.synchronize();
    return out;
}

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// Compares B against A over the entries `in_range` marks; entries outside must stay poisoned
// in both. Fills nerr, maxabs and note.
template <class InRange>
void measure(const std::vector<float>& a, const std::vector<float>& b, InRange in_range, CompareRecord& rec) {
    double num = 0.0, den = 0.0, maxabs = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!in_range(i)) {
            if (!is_poison(a[i]) || !is_poison(b[i])) {
                rec.note = std::string(is_poison(b[i]) ? "backend A" : "backend B") + " wrote outside its output at " +
                           std::to_string(i);
                rec.nerr = INFINITY;
                return;
            }
            continue;
        }
        if (is_poison(a[i]) || is_poison(b[i])) {
            rec.note = std::string(is_poison(b[i]) ? "backend B" : "backend A") + " left output " + std::to_string(i) +
                       " unwritten";
            rec.nerr = INFINITY;
            return;
        }
        const double d = (double)b[i] - (double)a[i];
        num += d * d;
        den += (double)a[i] * (double)a[i];
        if (!(std::fabs(d) <= maxabs)) maxabs = std::fabs(d);  // a NaN difference sticks
    }
    rec.maxabs = maxabs;
    rec.nerr = den > 0.0 ? std::sqrt(num / den) : (num > 0.0 ? INFINITY : 0.0);
    if (std::isnan(maxabs)) rec.nerr = NAN;
}

}  // namespace compare_detail

class Ds4Model;
// The cases of every operation but matmul and rms_norm (backend_compare_ops.cpp), appended to out.
void compare_model_ops(Backend& a, Backend& b, const Ds4Model& model, uint64_t seed, std::vector<CompareRecord>& out);

}  // namespace ds4
