"""The CPU backend's scalar numerics, element by element: FP8/FP4 round trips, Hadamard and
RoPE/YaRN angles against the float64 reference's functions (tests/reference/
ds4_ref_numerics.py, written from the spec and ds4.c), F16 rounding against numpy.
Inputs are float32 (what the engine holds), so both sides see the same values."""
import numpy as np
import pytest

from engine_fixtures import tokens  # noqa: F401  (puts tests/reference on sys.path)
from ds4_ref_numerics import (  # noqa: E402
    E2M1_VALUES, E4M3FN_VALUES, RopeParams, fp4_e2m1_round_trip, fp8_e4m3_round_trip, hadamard_matrix, rope_angles,
)

from ds4kit import _engine


def _blocks(rng, n_blocks, block):
    """Random blocks at many magnitudes, plus exact grid points and midpoints (ties)."""
    x = rng.standard_normal((n_blocks, block)) * np.exp(rng.uniform(-12, 8, (n_blocks, 1)))
    return x.astype(np.float32)


def _with_ties(grid, top, block, rng, n_blocks=64):
    """Blocks whose amax is exactly `top` (scale 1), filled with grid values and midpoints
    between neighbours: the rounding rule's tie cases."""
    mids = (grid[1:] + grid[:-1]) / 2
    vals = np.concatenate([grid, mids, -grid, -mids])
    out = rng.choice(vals, (n_blocks, block))
    out[:, 0] = top
    return out.astype(np.float32)


def test_fp8_round_trip_matches_reference():
    rng = np.random.default_rng(1)
    x = np.concatenate([_blocks(rng, 200, 64), _with_ties(E4M3FN_VALUES, 448.0, 64, rng),
                        np.zeros((1, 64), np.float32), np.full((1, 64), 1e-7, np.float32)])
    got = _engine._fp8_e4m3_round_trip(x.reshape(-1)).reshape(x.shape)
    want = np.array([fp8_e4m3_round_trip(b.astype(np.float64)) for b in x])
    assert np.array_equal(got, want.astype(np.float32))


def test_fp8_round_trip_short_last_block():
    # head_dim 64 with 16 RoPE dims leaves 48 values: one short block, amax of its own.
    x = _blocks(np.random.default_rng(2), 1, 48).reshape(-1)
    assert np.array_equal(_engine._fp8_e4m3_round_trip(x), fp8_e4m3_round_trip(x.astype(np.float64)).astype(np.float32))


def test_fp4_round_trip_matches_reference():
    rng = np.random.default_rng(3)
    x = np.concatenate([_blocks(rng, 200, 32), _with_ties(E2M1_VALUES, 6.0, 32, rng),
                        np.zeros((1, 32), np.float32)])
    got = _engine._fp4_e2m1_round_trip(x.reshape(-1)).reshape(x.shape)
    want = np.array([fp4_e2m1_round_trip(b.astype(np.float64)) for b in x])
    assert np.array_equal(got, want.astype(np.float32))


def test_f16_rounding_matches_numpy():
    rng = np.random.default_rng(4)
    x = np.concatenate([
        (rng.standard_normal(20000) * np.exp(rng.uniform(-20, 12, 20000))).astype(np.float32),
        np.array([0.0, -0.0, 65504.0, 65519.99, 65520.0, 1e9, -1e9, np.inf, -np.inf,
                  2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -26], np.float32),
    ])
    # Exact ties between neighbouring halves (round half to even).
    halves = np.arange(0, 0x7BFF, 7, dtype=np.uint16).view(np.float16).astype(np.float32)
    nxt = (np.arange(0, 0x7BFF, 7, dtype=np.uint16) + 1).view(np.float16).astype(np.float32)
    x = np.concatenate([x, (halves + nxt) / 2])
    got = _engine._f32_to_f16_bits(x)
    with np.errstate(over="ignore"):   # 65520 and up overflow to inf, as they should
        want = x.astype(np.float16).view(np.uint16)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("n", [32, 64, 128])
def test_hadamard_matches_reference(n):
    x = np.random.default_rng(n).standard_normal(n)
    np.testing.assert_allclose(_engine._hadamard(list(x)), hadamard_matrix(n) @ x, rtol=0, atol=1e-12)


@pytest.mark.parametrize("pos", [0, 1, 127, 4096, 70000])
def test_rope_and_yarn_angles_match_reference(pos):
    plain = RopeParams(n_rot=64, freq_base=10000.0)
    yarn = RopeParams(n_rot=64, freq_base=160000.0, freq_scale=1 / 16, ext_factor=1.0, n_ctx_orig=65536,
                      beta_fast=32.0, beta_slow=1.0)
    for p in (plain, yarn):
        got = _engine._rope_angles(pos, p.n_rot, p.freq_base, p.freq_scale, p.ext_factor, p.n_ctx_orig,
                                   p.beta_fast, p.beta_slow)
        np.testing.assert_allclose(got, rope_angles(pos, p), rtol=1e-13, atol=0)
