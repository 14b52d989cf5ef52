"""Building blocks of the numpy reference against independent hand checks."""
import math

import numpy as np
import pytest

from ds4_ref_numerics import (
    E2M1_VALUES, E4M3FN_VALUES, RopeParams, clamped_swiglu, fp4_e2m1_round_trip,
    fp8_e4m3_round_trip, fp8_kv_round_trip, hadamard_matrix, hc_post, hc_split, round_to_grid,
    rope_angles, rope_tail, sinkhorn, softplus, top_k_indices, yarn_corr_dims,
)

SPEC_YARN = RopeParams(n_rot=64, freq_base=160000.0, freq_scale=1 / 16, ext_factor=1.0,
                       n_ctx_orig=65536, beta_fast=32.0, beta_slow=1.0)
PLAIN_160K = RopeParams(n_rot=64, freq_base=160000.0)


# ------------------------------------------------------------------- Sinkhorn

def test_sinkhorn_is_doubly_stochastic_after_20_rounds():
    logits = np.array([[2.0, -1.0, 0.5, 3.0],
                       [0.0, 0.0, 0.0, 0.0],
                       [-4.0, 1.0, 2.0, -0.5],
                       [1.5, 1.5, -2.0, 0.25]])
    M = sinkhorn(logits, iters=20, eps=1e-6)
    assert np.all(M > 0)
    np.testing.assert_allclose(M.sum(axis=0), 1.0, atol=1e-6)
    np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-6)


def test_sinkhorn_first_round_by_hand():
    # One round = row softmax, +eps, one column normalisation (divide by colsum+eps).
    logits = np.array([[0.0, math.log(3.0)], [math.log(2.0), math.log(2.0)]])
    eps = 1e-6
    soft = np.array([[0.25, 0.75], [0.5, 0.5]]) + eps
    want = soft / (soft.sum(axis=0) + eps)
    np.testing.assert_allclose(sinkhorn(logits, iters=1, eps=eps), want, rtol=1e-14)


def test_hc_split_and_post_follow_spec_indexing():
    n = 4
    m = np.arange(24, dtype=float) / 10.0
    scale = np.array([0.5, 2.0, 1.0])
    base = np.linspace(-1, 1, 24)
    sp = hc_split(m, scale, base, n, iters=20, eps=1e-6)
    np.testing.assert_allclose(sp.pre, 1 / (1 + np.exp(-(0.5 * m[:4] + base[:4]))) + 1e-6)
    np.testing.assert_allclose(sp.post, 2 / (1 + np.exp(-(2.0 * m[4:8] + base[4:8]))))
    # M[r][c] comes from mix index 8 + 4r + c; softmax runs along c: a large logit at
    # (r=1, c=2) must make M[1][2] the largest entry of row 1.
    m2 = m.copy()
    m2[8 + 4 * 1 + 2] = 50.0
    M = hc_split(m2, scale, base, n, 20, 1e-6).comb
    assert np.argmax(M[1]) == 2
    # X'_j = post_j y + sum_r M[r][j] X_r, checked one stream at a time.
    X = np.arange(4 * 3, dtype=float).reshape(4, 3)
    y = np.array([1.0, -2.0, 0.5])
    out = hc_post(y, X, sp)
    for j in range(4):
        want = sp.post[j] * y + sum(sp.comb[r, j] * X[r] for r in range(4))
        np.testing.assert_allclose(out[j], want, rtol=1e-14)


# ----------------------------------------------------------------------- RoPE

@pytest.mark.parametrize("params", [RopeParams(n_rot=64, freq_base=10000.0), SPEC_YARN])
def test_rope_is_a_rotation_of_the_tail_only(params):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 128))
    for pos in (0, 1, 17, 4095, 100000):
        y = rope_tail(x, pos, params)
        np.testing.assert_array_equal(y[:, :64], x[:, :64])            # non-RoPE dims untouched
        pairs_x = x[:, 64:].reshape(3, 32, 2)
        pairs_y = y[:, 64:].reshape(3, 32, 2)
        np.testing.assert_allclose(np.linalg.norm(pairs_y, axis=-1), np.linalg.norm(pairs_x, axis=-1),
                                   rtol=1e-12)                         # each pair keeps its length
        np.testing.assert_allclose(rope_tail(y, pos, params, inverse=True), x, atol=1e-12)


def test_rope_rotates_adjacent_pairs_by_hand():
    # Pair 0 has frequency base^0 = 1: at position p it turns by p radians, as (x0, x1)
    # -> (x0 cos p - x1 sin p, x0 sin p + x1 cos p); the last pair turns by p*base^(-62/64).
    p = 3.0
    x = np.zeros(64)
    x[0], x[1] = 1.0, 2.0
    x[62], x[63] = -1.0, 0.5
    y = rope_tail(x, p, RopeParams(n_rot=64, freq_base=10000.0))
    np.testing.assert_allclose(y[:2], [math.cos(p) - 2 * math.sin(p), math.sin(p) + 2 * math.cos(p)])
    a = p * 10000.0 ** (-62 / 64)
    np.testing.assert_allclose(y[62:], [-math.cos(a) - 0.5 * math.sin(a), -math.sin(a) + 0.5 * math.cos(a)])


def test_yarn_corr_dims_match_spec():
    assert yarn_corr_dims(SPEC_YARN) == (15.0, 25.0)


def test_yarn_equals_plain_rope_where_the_ramp_says_so():
    lo, hi = yarn_corr_dims(SPEC_YARN)
    i = np.arange(32)
    for pos in (0, 5, 1000, 65535):
        yarn = rope_angles(pos, SPEC_YARN)
        plain = rope_angles(pos, PLAIN_160K)
        # Below lo the ramp is 1: extrapolated = plain RoPE with the same base.
        np.testing.assert_allclose(yarn[i <= lo], plain[i <= lo], rtol=1e-15, atol=0)
        # At and above hi the ramp is 0: interpolated = plain RoPE at position pos/16.
        np.testing.assert_allclose(yarn[i >= hi], rope_angles(pos / 16, PLAIN_160K)[i >= hi], rtol=1e-13)
    # Inside the ramp the angle lies strictly between the two.
    pos = 1000
    mid = (i > lo) & (i < hi)
    a = rope_angles(pos, SPEC_YARN)[mid]
    ext = rope_angles(pos, PLAIN_160K)[mid]
    inter = rope_angles(pos / 16, PLAIN_160K)[mid]
    assert np.all((a < ext) & (a > inter))


# -------------------------------------------------------------------- FP8 / FP4

def test_e4m3_grid_by_hand():
    assert len(E4M3FN_VALUES) == 127 and E4M3FN_VALUES[-1] == 448.0
    assert E4M3FN_VALUES[1] == 2.0 ** -9                      # smallest subnormal
    assert E4M3FN_VALUES[8] == 2.0 ** -6                      # smallest normal
    assert E4M3FN_VALUES[56] == 1.0 and E4M3FN_VALUES[57] == 1.125


def test_e4m3_rounding_by_hand():
    v = np.array([1.0625, 1.1875, 1.07, -3.3, 300.0, 500.0, -1000.0, 0.003, 0.0009, 0.0])
    want = np.array([1.0, 1.25, 1.125, -3.25, 288.0, 448.0, -448.0, 2 * 2.0 ** -9, 0.0, 0.0])
    # 1.0625 is halfway 1.0|1.125 -> even code (1.0); 1.1875 halfway 1.125|1.25 -> 1.25 (even code 58);
    # 300 lies between 288 and 320 (step 32) -> 288; beyond 448 saturates;
    # subnormals: 0.003 = 1.54 * 2^-9 -> 2 * 2^-9; 0.0009 = 0.46 * 2^-9 -> 0.
    np.testing.assert_array_equal(round_to_grid(v, E4M3FN_VALUES), want)


def test_fp8_round_trip_blocks_and_power_of_two_scale():
    # Block 0: amax = 1 -> scale 2^ceil(log2(1/448)) = 2^-8; 1.0/2^-8 = 256 exact,
    # 0.3/2^-8 = 76.8 -> 80 (step 8 in [64,128)).
    b0 = np.zeros(64); b0[0], b0[1] = 1.0, 0.3
    # Block 1: all tiny, amax floored to 1e-4 -> scale 2^-22; 1e-6/2^-22 = 4.194 -> 4.0 (step 0.5).
    b1 = np.full(64, 1e-6)
    out = fp8_e4m3_round_trip(np.concatenate([b0, b1]))
    assert out[0] == 1.0
    assert out[1] == 80 * 2.0 ** -8
    np.testing.assert_array_equal(out[64:], 4.0 * 2.0 ** -22)
    # Saturation inside a block cannot happen (the scale keeps amax/scale <= 448), and the block's max is exact
    # when it is a power of two times a grid value.
    b = np.linspace(-3.0, 2.0, 64)
    assert fp8_e4m3_round_trip(b)[0] == -3.0


def test_fp8_kv_keeps_rope_dims():
    rng = np.random.default_rng(2)
    kv = rng.standard_normal(128)
    out = fp8_kv_round_trip(kv, n_rot=64)
    np.testing.assert_array_equal(out[64:], kv[64:])
    assert np.any(out[:64] != kv[:64])
    assert np.max(np.abs(out[:64] - kv[:64]) / np.max(np.abs(kv[:64]))) < 2 ** -4   # 3 mantissa bits


def test_e2m1_rounding_by_hand():
    v = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 5.1, 7.0, -0.3, -2.9])
    want = np.array([0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, 6.0, -0.5, -3.0])
    np.testing.assert_array_equal(round_to_grid(v, E2M1_VALUES), want)


def test_fp4_round_trip_scale_and_tiny_values():
    # amax 3 -> scale 2^ceil(log2(3/6)) = 0.5; 1.3/0.5 = 2.6 -> 3 -> 1.5; -0.8/0.5 = -1.6 -> -1.5 -> -0.75.
    b = np.zeros(32); b[0], b[1], b[2] = 3.0, 1.3, -0.8
    out = fp4_e2m1_round_trip(b)
    assert list(out[:3]) == [3.0, 1.5, -0.75]
    np.testing.assert_array_equal(fp4_e2m1_round_trip(np.zeros(32)), 0.0)
    # Tiny values keep their own power-of-two scale: amax 3e-30 -> scale 2^-100;
    # 3e-30/2^-100 = 3.80 -> 4; 1e-30/2^-100 = 1.27 -> 1.5.
    tiny = np.full(32, 1e-30); tiny[0] = 3e-30
    t = fp4_e2m1_round_trip(tiny)
    assert t[0] == 4 * 2.0 ** -100
    np.testing.assert_array_equal(t[1:], 1.5 * 2.0 ** -100)
    with pytest.raises(ValueError, match="multiple of 32"):
        fp4_e2m1_round_trip(np.zeros(40))


# ------------------------------------------------------------------- Hadamard

def test_hadamard_is_orthonormal():
    H = hadamard_matrix(128)
    np.testing.assert_allclose(H @ H.T, np.eye(128), atol=1e-13)
    np.testing.assert_allclose(H[0], 1 / math.sqrt(128))
    np.testing.assert_allclose(hadamard_matrix(2), np.array([[1, 1], [1, -1]]) / math.sqrt(2))
    with pytest.raises(ValueError):
        hadamard_matrix(96)


# ------------------------------------------------------------ routing pieces

def test_top_k_selects_largest_and_breaks_ties_low_index_first():
    s = np.array([0.1, 0.9, 0.5, 0.9, -1.0, 0.5])
    assert list(top_k_indices(s, 3)) == [1, 3, 2]
    assert list(top_k_indices(s, 4)) == [1, 3, 2, 5]
    rng = np.random.default_rng(3)
    r = rng.standard_normal(50)
    assert set(top_k_indices(r, 7)) == set(np.argsort(r)[-7:])


def test_softplus_is_stable_and_exact():
    x = np.array([-800.0, -20.0, 0.0, 3.0, 800.0])
    want = [0.0, math.log1p(math.exp(-20)), math.log(2), math.log1p(math.exp(3)), 800.0]
    np.testing.assert_allclose(softplus(x), want)


def test_clamped_swiglu_by_hand():
    g = np.array([20.0, -3.0, 1.0])
    u = np.array([15.0, -12.0, 2.0])
    silu = lambda z: z / (1 + math.exp(-z))  # noqa: E731
    want = [silu(10.0) * 10.0, silu(-3.0) * -10.0, silu(1.0) * 2.0]
    np.testing.assert_allclose(clamped_swiglu(g, u, 10.0), want)
    np.testing.assert_allclose(clamped_swiglu(g, u, 0.0), [silu(20.0) * 15, silu(-3.0) * -12, silu(1.0) * 2])
