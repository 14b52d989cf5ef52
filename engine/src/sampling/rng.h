// Deterministic, platform-independent random numbers for sampling: xoshiro256**
// seeded through splitmix64. The same seed gives the same draws on every machine
// and compiler (std::mt19937 distributions are not specified bit-for-bit).
#pragma once
#include <cstdint>

namespace ds4 {

class Rng {
public:
    explicit Rng(uint64_t seed) { reseed(seed); }

    void reseed(uint64_t seed) {
        uint64_t z = seed;
        for (auto& w : s_) w = splitmix64(z);
    }

    uint64_t next_u64() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform in [0, 1) with 53 random bits.
    double next_unit() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    static uint64_t splitmix64(uint64_t& state) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t s_[4];
};

}  // namespace ds4
