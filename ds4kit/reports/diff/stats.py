"""The paired statistics report diff uses (one place for each)."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: under "no difference" each discordant pair (a task one
    side passes and the other fails) goes either way with probability 1/2."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)


def bootstrap_mean_diff(a: Sequence[float], b: Sequence[float], *, resamples: int = 10000, level: float = 0.95,
                        seed: int = 0) -> dict[str, float | int | None]:
    """Percentile bootstrap of mean(b) - mean(a) and mean(b) / mean(a), each side resampled
    with replacement on its own (the runs are independent); a seeded generator, so the same
    inputs give the same interval."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size == 0 or y.size == 0:
        return {"n_a": int(x.size), "n_b": int(y.size), "mean_a": None, "mean_b": None, "diff": None,
                "diff_lo": None, "diff_hi": None, "ratio": None, "ratio_lo": None, "ratio_hi": None}
    rng = np.random.default_rng(seed)
    ma = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    mb = y[rng.integers(0, y.size, size=(resamples, y.size))].mean(axis=1)
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    d_lo, d_hi = np.percentile(mb - ma, q)
    r_lo, r_hi = np.percentile(mb / ma, q) if np.all(ma > 0) else (None, None)
    return {"n_a": int(x.size), "n_b": int(y.size), "mean_a": float(x.mean()), "mean_b": float(y.mean()),
            "diff": float(y.mean() - x.mean()), "diff_lo": float(d_lo), "diff_hi": float(d_hi),
            "ratio": float(y.mean() / x.mean()) if x.mean() > 0 else None,
            "ratio_lo": None if r_lo is None else float(r_lo), "ratio_hi": None if r_hi is None else float(r_hi),
            "level": level, "resamples": resamples}


def fmt(v, digits: int = 3) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)
