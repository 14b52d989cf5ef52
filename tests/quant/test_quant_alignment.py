"""Rows need not be aligned: a raw buffer sliced at an odd byte offset (as a
view into a mapped GGUF can be) gives the same bits as an aligned copy."""
import numpy as np
import pytest

from ds4kit import _engine

ROW_BYTES = {0: 4, 1: 2, 30: 2, 8: 34 / 32, 39: 17 / 32, 103: 33 / 32, 16: 66 / 256}


@pytest.mark.parametrize("type_id", sorted(ROW_BYTES))
def test_misaligned_row_same_bits(type_id):
    n = 512 + (37 if type_id in (0, 1, 30) else 0)
    nbytes = int(n * ROW_BYTES[type_id])
    rng = np.random.default_rng(type_id)
    if type_id in (0, 1, 30):
        vals = rng.standard_normal(n).astype(np.float32)
        raw = {0: vals, 1: vals.astype(np.float16), 30: (vals.view(np.uint32) >> 16).astype(np.uint16)}[type_id]
        raw = raw.view(np.uint8)
    else:
        raw = rng.integers(0, 256, size=nbytes, dtype=np.uint8)
        if type_id in (8, 16):  # finite f16 scale at the start of each block
            block = 34 if type_id == 8 else 66
            raw = raw.reshape(-1, block)
            raw[:, :2] = np.full((raw.shape[0], 1), 0.01, np.float16).view(np.uint8)
            raw = raw.reshape(-1)
    backing = np.zeros(nbytes + 1, np.uint8)
    backing[1:] = raw
    odd = backing[1:]  # data pointer at an odd address
    assert odd.ctypes.data % 2 == 1
    x = rng.standard_normal(n).astype(np.float32)
    assert np.array_equal(_engine.dequantize(type_id, odd, n).view(np.uint32),
                          _engine.dequantize(type_id, raw, n).view(np.uint32))
    a, b = _engine.dot_row(type_id, odd, x), _engine.dot_row(type_id, raw, x)
    assert np.float32(a).view(np.uint32) == np.float32(b).view(np.uint32)
    X = rng.standard_normal((3, n)).astype(np.float32)
    assert np.array_equal(_engine.dot_row_cols(type_id, odd, X), _engine.dot_row_cols(type_id, raw, X))
