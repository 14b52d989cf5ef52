"""The int8 columns of ds4_ref_int8 against values worked out by hand and the rounding bound."""
import numpy as np

from ds4_ref_int8 import Int8Columns, quantise_int8


def test_int8_columns_by_hand():
    # amax 127 -> d = 1: the values round half to even (2.5 -> 2, 3.5 -> 4, -0.5 -> -0)
    x = np.zeros(32)
    x[:6] = [127.0, 2.5, 3.5, -0.5, 1.49, -127.0]
    got = quantise_int8(x)
    assert got[:6].tolist() == [127.0, 2.0, 4.0, -0.0, 1.0, -127.0]
    assert not got[6:].any()
    assert not quantise_int8(np.zeros(40)).any()  # an all-zero block and a short last block


def test_int8_rounding_is_within_half_a_step_per_block():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000) * np.repeat([1e-3, 1.0, 50.0, 7.0], 250)
    got = quantise_int8(x)
    for b in range(0, 1000, 32):
        blk = x[b:b + 32].astype(np.float32)
        d = np.float32(np.abs(blk).max()) / np.float32(127)
        assert np.all(np.abs(got[b:b + 32] - blk) <= d / 2 * (1 + 1e-6))
        q = got[b:b + 32] / d
        assert np.allclose(q, np.round(q), atol=1e-4)  # integers times the block's step


def test_int8_columns_multiply_like_the_array():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 5, 64))
    x = rng.standard_normal(64)
    m = Int8Columns(w)
    assert np.array_equal(m[1] @ x, w[1] @ quantise_int8(x))
    cols = rng.standard_normal((64, 2))
    assert np.array_equal(m[2] @ cols, w[2] @ np.stack([quantise_int8(cols[:, 0]), quantise_int8(cols[:, 1])], 1))
    assert m.counter["products"] == 2 and m.shape == (3, 5, 64)
