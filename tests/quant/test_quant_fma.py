"""The portable kernels' fma (fma_f32 in dequant_blocks.h: double arithmetic, std::fma on
the rare hard cases) rounds a*b + c once, exactly like an FMA instruction. Checked
against an exact rational reference on random operands and on constructed hard cases:
exact sums one double-rounding away from a float half-way point, float subnormal and
zero results, infinities."""
from fractions import Fraction

import numpy as np
import pytest

from ds4kit import _engine

F32 = np.float32


def round_f32(v: Fraction) -> F32:
    """v rounded to the nearest float32, ties to even (no overflow in these tests)."""
    f = F32(float(v))
    cands = {float(f), float(np.nextafter(f, F32(-np.inf))), float(np.nextafter(f, F32(np.inf)))}
    cands = sorted(F32(c) for c in cands if np.isfinite(c))
    best = min(abs(Fraction(float(c)) - v) for c in cands)
    near = [c for c in cands if abs(Fraction(float(c)) - v) == best]
    if len(near) == 2:  # a tie: the even significand
        near = [c for c in near if int(np.array(c).view(np.uint32)) % 2 == 0]
    return near[0]


def exact_fma(a, b, c) -> np.ndarray:
    out = np.empty(len(a), F32)
    for i, (x, y, z) in enumerate(zip(a.tolist(), b.tolist(), c.tolist())):
        v = Fraction(x) * Fraction(y) + Fraction(z)
        if v == 0:  # an exact zero: +0 unless both addends are -0 (round to nearest)
            prod_neg = np.signbit(F32(x)) != np.signbit(F32(y))
            out[i] = F32(-0.0) if (prod_neg and np.signbit(F32(z))) else F32(0.0)
        else:
            out[i] = round_f32(v)
    return out


def check(a, b, c):
    a, b, c = (np.asarray(v, F32) for v in (a, b, c))
    got = _engine._fma_f32(a, b, c)
    want = exact_fma(a, b, c)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, [(float(a[i]), float(b[i]), float(c[i]), float(got[i]), float(want[i])) for i in bad[:5]]


def test_random_operands():
    rng = np.random.default_rng(5)
    n = 20000
    a = rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))
    b = rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))
    c = rng.standard_normal(n) * np.exp2(rng.integers(-40, 40, n))
    check(a, b, c)


def test_quantised_weights_times_activations():
    # few-bit weights (exact sums in double are common) against float activations
    rng = np.random.default_rng(6)
    n = 20000
    a = (rng.integers(-8, 8, n) * F32(0.0123)).astype(F32)
    b = rng.standard_normal(n).astype(F32)
    c = (rng.standard_normal(n) * 3).astype(F32)
    check(a, b, c)


def test_half_way_after_double_rounding():
    """c = f (odd significand), |a*b| = ulp(f)/2 * (1 - 2^-46): the exact sum lies just
    inside a half-way point of f (below f + ulp/2, or above f - ulp/2), and the double
    sum rounds onto it. The right answer is f; rounding the double sum to float (ties to
    even) would give f's even neighbour."""
    rng = np.random.default_rng(7)
    m = rng.integers(1, 1 << 22, 400) * 2 + 1  # odd significands, f not a power of two
    e = rng.integers(-100, 100, 400)
    f = np.ldexp(1.0 + m / 2.0 ** 23, e).astype(F32)
    a = np.ldexp(1.0 + 2.0 ** -23, (e - 24) // 2).astype(F32)
    b = np.ldexp(1.0 - 2.0 ** -23, e - 24 - (e - 24) // 2).astype(F32)
    for sa in (1, -1):
        for sc in (1, -1):
            naive = (np.float64(sa) * a * b.astype(np.float64) + sc * f.astype(np.float64)).astype(F32)
            assert np.all(naive != sc * f)  # the case is hard: plain double arithmetic gets it wrong
            check(sa * a, b, sc * f)


def test_subnormal_zero_and_infinite_results():
    rng = np.random.default_rng(8)
    n = 4000
    a = rng.standard_normal(n) * 2.0 ** -70
    b = rng.standard_normal(n) * 2.0 ** -70
    c = rng.standard_normal(n) * 2.0 ** -135
    check(a, b, c)  # products and sums around the float subnormal range
    x = rng.standard_normal(n).astype(F32)
    check(x, np.ones(n), -x)  # exact cancellation: +0
    check(np.zeros(n), x, np.zeros(n))
    check(-np.zeros(n), np.abs(x), -np.zeros(n))  # -0 * + -0 = -0
    got = _engine._fma_f32(np.array([np.inf, 3.0e38], F32), np.array([1.0, 10.0], F32), np.array([1.0, 0.0], F32))
    assert np.isposinf(got).all()


@pytest.mark.parametrize("ab_c", [(1.5, 2.0, np.nan), (np.inf, 0.0, 1.0), (np.inf, 1.0, -np.inf)])
def test_nan_results(ab_c):
    a, b, c = (np.array([v], F32) for v in ab_c)
    assert np.isnan(_engine._fma_f32(a, b, c)).all()
