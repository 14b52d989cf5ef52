// Scalar numerics of the DeepSeek V4 forward pass shared by the CPU backend:
// F16 conversion, D's FP8/FP4 round trips, the Hadamard transform, RoPE angles.
// Rounding rules follow ds4.c as documented in tests/reference/ds4_ref_numerics.py.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace ds4 {

uint16_t f32_to_f16(float f);  // round to nearest even; overflow gives inf
float f16_to_f32(uint16_t h);

// FP8-E4M3 round trip of n values in blocks of 64: scale 2^ceil(log2(amax/448)), amax >= 1e-4.
void fp8_e4m3_round_trip(float* x, int64_t n);
// FP4-E2M1 round trip of n values (a multiple of 32) in blocks of 32: scale 2^ceil(log2(amax/6)).
void fp4_e2m1_round_trip(float* x, int64_t n);
// In-place orthonormal Sylvester-Hadamard transform (natural order) of n = 2^k values.
void hadamard_inplace(double* x, int64_t n);
// Angle of each of the n_rot/2 adjacent pairs at position pos (YaRN ramp when ext_factor != 0).
std::vector<double> rope_angles(double pos, const RopeSpec& spec);
void rope_angles(double pos, const RopeSpec& spec, double* theta);  // into theta[n_rot / 2]

}  // namespace ds4
