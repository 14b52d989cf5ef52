#include "backend/cpu/cpu_numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ds4 {

uint16_t f32_to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (ax < 0x38800000u) {
        // Below 2^-14: a half subnormal, in units of 2^-24. The scaling is exact and
        // nearbyint rounds half to even in the default rounding mode.
        float a;
        std::memcpy(&a, &ax, 4);
        return (uint16_t)(sign | (uint32_t)std::nearbyint(a * 16777216.0f));
    }
    uint32_t h = ((((ax >> 23) - 127u + 15u)) << 10) | ((ax & 0x7fffffu) >> 13);
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carries into the exponent correctly
    return (uint16_t)(sign | h);
}

float f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    const uint32_t m = h & 0x3ffu;
    float out;
    if (e == 0) {
        out = std::ldexp((float)m, -24);
        uint32_t bits;
        std::memcpy(&bits, &out, 4);
        bits |= sign;
        std::memcpy(&out, &bits, 4);
        return out;
    }
    const uint32_t bits = sign | (e == 31 ? (0xffu << 23) | (m << 13) : ((e - 15u + 127u) << 23) | (m << 13));
    std::memcpy(&out, &bits, 4);
    return out;
}

namespace {

std::vector<double> e4m3fn_grid() {
    // The 127 non-negative finite E4M3FN magnitudes in code order (bias 7; code 127 is NaN).
    std::vector<double> g;
    for (int code = 0; code < 127; ++code) {
        const int e = code >> 3, mant = code & 7;
        g.push_back(e == 0 ? mant * std::ldexp(1.0, -9) : (1.0 + mant / 8.0) * std::ldexp(1.0, e - 7));
    }
    return g;
}

const std::vector<double>& e4m3_grid() {
    static const std::vector<double> g = e4m3fn_grid();
    return g;
}

const std::vector<double>& e2m1_grid() {
    static const std::vector<double> g = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    return g;
}

// Nearest grid value to |x| (ties to the even code index), saturating, sign kept.
double round_to_grid(double x, const std::vector<double>& grid) {
    const double ax = std::min(std::fabs(x), grid.back());
    size_t hi = (size_t)(std::lower_bound(grid.begin(), grid.end(), ax) - grid.begin());
    hi = std::min(std::max<size_t>(hi, 1), grid.size() - 1);
    const size_t lo = hi - 1;
    const double d_lo = ax - grid[lo], d_hi = grid[hi] - ax;
    const bool pick_hi = d_hi < d_lo || (d_hi == d_lo && hi % 2 == 0);
    const double v = grid[pick_hi ? hi : lo];
    return x < 0 ? -v : v;
}

// Smallest power of two s with amax / s <= top, i.e. 2^ceil(log2(amax / top)).
double pow2_scale(double amax, double top) {
    int e = 0;
    const double m = std::frexp(amax / top, &e);  // amax/top = m * 2^e, m in [0.5, 1)
    return std::ldexp(1.0, m == 0.5 ? e - 1 : e);
}

void block_round_trip(float* x, int64_t n, int64_t block, double top, double amax_floor,
                      const std::vector<double>& grid) {
    for (int64_t off = 0; off < n; off += block) {
        const int64_t len = std::min(block, n - off);
        double amax = 0.0;
        for (int64_t i = 0; i < len; ++i) amax = std::max(amax, (double)std::fabs(x[off + i]));
        const double s = pow2_scale(std::max(amax, amax_floor), top);
        for (int64_t i = 0; i < len; ++i) {
            const double q = std::min(std::max((double)x[off + i] / s, -top), top);
            x[off + i] = (float)(round_to_grid(q, grid) * s);
        }
    }
}

}  // namespace

void fp8_e4m3_round_trip(float* x, int64_t n) { block_round_trip(x, n, 64, 448.0, 1e-4, e4m3_grid()); }

void fp4_e2m1_round_trip(float* x, int64_t n) {
    // ds4.c floors amax at this tiny value so the scale never underflows to zero.
    block_round_trip(x, n, 32, 6.0, 7.052966104933725e-38, e2m1_grid());
}

void hadamard_inplace(double* x, int64_t n) {
    for (int64_t len = 1; len < n; len *= 2) {
        for (int64_t i = 0; i < n; i += 2 * len) {
            for (int64_t j = i; j < i + len; ++j) {
                const double a = x[j], b = x[j + len];
                x[j] = a + b;
                x[j + len] = a - b;
            }
        }
    }
    const double s = 1.0 / std::sqrt((double)n);
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

std::vector<double> rope_angles(double pos, const RopeSpec& p) {
    std::vector<double> theta((size_t)(p.n_rot / 2));
    rope_angles(pos, p, theta.data());
    return theta;
}

void rope_angles(double pos, const RopeSpec& p, double* theta) {
    const int64_t half = p.n_rot / 2;
    double lo = 0.0, hi = 0.0;
    if (p.ext_factor != 0.0) {
        // YaRN correction range in pair indices (ds4.c rope_yarn_corr_dims): floor
        // of the beta_fast dim, ceil of the beta_slow dim, clipped to [0, n_rot-1].
        auto corr_dim = [&](double n_turns) {
            return (double)p.n_rot * std::log((double)p.n_ctx_orig / (n_turns * 2.0 * M_PI)) /
                   (2.0 * std::log(p.freq_base));
        };
        lo = std::max(0.0, std::floor(corr_dim(p.beta_fast)));
        hi = std::min((double)(p.n_rot - 1), std::ceil(corr_dim(p.beta_slow)));
    }
    for (int64_t i = 0; i < half; ++i) {
        const double extrap = pos * std::pow(p.freq_base, -2.0 * (double)i / (double)p.n_rot);
        const double interp = p.freq_scale * extrap;
        if (p.ext_factor == 0.0) {
            theta[(size_t)i] = interp;
            continue;
        }
        const double y = ((double)i - lo) / std::max(0.001, hi - lo);
        const double mix = (1.0 - std::min(std::max(y, 0.0), 1.0)) * p.ext_factor;
        theta[(size_t)i] = interp * (1.0 - mix) + extrap * mix;
    }
}

}  // namespace ds4
