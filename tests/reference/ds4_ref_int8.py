"""int8 columns for the numpy reference: what docs/gpu-backend.md's bits design for tensor-core
prefill does to a column before a quantised matrix multiplies it (per 32 values d =
float32(amax) / 127, q = x / d rounded half to even, x' = q * d in float32), so that the float64
reference with `Int8Columns` weights is the oracle for a GPU that computes that way.

    w = load_weights(path)
    tensors = {k: Int8Columns(v) if type_of[k] in ("Q8_0", "Q2_K") else v for k, v in w.tensors.items()}
    s = ReferenceSession(Weights(hp=w.hp, tensors=tensors), max_ctx)
"""
from __future__ import annotations

import numpy as np

BLOCK = 32


def quantise_int8(x: np.ndarray) -> np.ndarray:
    """x (1-D) as the design's int8 column, dequantised (float64 holding float32 values)."""
    x32 = np.asarray(x, dtype=np.float32)
    n = x32.shape[0]
    pad = (-n) % BLOCK
    blocks = np.concatenate([x32, np.zeros(pad, np.float32)]).reshape(-1, BLOCK)
    d = (np.abs(blocks).max(axis=1) / np.float32(127.0)).astype(np.float32)
    safe = np.where(d == 0, np.float32(1.0), d)
    q = np.clip(np.rint(blocks / safe[:, None]), -127, 127).astype(np.float32)  # rint: half to even
    return (q * d[:, None]).astype(np.float32).reshape(-1)[:n].astype(np.float64)


class Int8Columns:
    """A weight matrix (or a stack of them, indexed like the array) whose products take int8
    columns; `products` counts the products it served. noise (a numpy Generator): each column
    value is first multiplied by 1 + u 2^-21, u uniform in [-1, 1] (about 8 float32 ulps, the
    size of a float32 engine's rounding differences), so a second run measures the oracle's own
    noise floor: the rounding flips that float noise alone causes."""

    def __init__(self, a: np.ndarray, counter: dict | None = None, noise: np.random.Generator | None = None):
        self.a = a
        self.counter = counter if counter is not None else {"products": 0}
        self.noise = noise

    def _column(self, c: np.ndarray) -> np.ndarray:
        if self.noise is not None:
            c = np.asarray(c, np.float64) * (1.0 + self.noise.uniform(-1.0, 1.0, np.shape(c)) * 2.0 ** -21)
        return quantise_int8(c)

    def __matmul__(self, x):
        x = np.asarray(x)
        self.counter["products"] += 1
        if x.ndim == 1:
            return self.a @ self._column(x)
        return self.a @ np.stack([self._column(c) for c in x.T], axis=1)

    def __getitem__(self, i):
        return Int8Columns(self.a[i], self.counter, self.noise)

    def __getattr__(self, name):  # shape, dtype, ...: the array's
        return getattr(self.a, name)
