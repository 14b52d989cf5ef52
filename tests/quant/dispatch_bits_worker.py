"""Runs in a subprocess (DS4KIT_CPU_FEATURES is read once per process) and writes every
output of the dot kernels (dot_row, dot_row_cols, matvec, matmul_rows) and of the
attention kernels, for fixed seeded inputs, to an .npz file (argv[1]).
test_quant_dispatch_bits.py compares the files of two dispatch levels byte for byte."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quant_dot_worker import make_rows  # noqa: E402

from ds4kit import _engine  # noqa: E402

N_COLS = 8
# 21 rows: the AVX-512 fused few-column path's 8-row tiles (twice), a 4-row tile and a
# 1-row tail; with more than 4 columns the 4-row register tiles.
N_ROWS = 21
# Row lengths per block size: short rows, rows that are not a multiple of 256 (or of 64,
# the float span) and, for float types, lengths with an 8-step and a < 8 scalar tail
# (n % 16 != 0 also keeps them off the AVX-512 path, n % 32 != 0 off its fused decoders).
LENGTHS = {1: [1, 7, 8, 15, 16, 17, 24, 31, 48, 63, 64, 65, 100, 1000, 2085, 2112],
           32: [32, 96, 160, 1056], 256: [256, 768, 2304]}
# Attention: head sizes with and without a tail after the 16-lane part (and n % 32 != 0,
# which sends AVX-512's weighted sums to the AVX2 kernel), key counts 1..37.
ATTN_N = [3, 8, 16, 17, 48, 64, 100, 512]
ATTN_T = [1, 5, 37]


def quant_outputs(rng) -> dict:
    out = {}
    for t in _engine.qtypes():
        if not t["kernels"]:
            continue
        tid = t["id"]
        for n in LENGTHS[t["block_size"]]:
            rows = make_rows(tid, n, N_ROWS, rng)
            # Activations of mixed scale and sign, so every reordering shows up in the bits.
            X = (rng.standard_normal((N_COLS, n)) * rng.uniform(0.1, 10.0, (N_COLS, 1))).astype(np.float32)
            key = f"{t['name']}/n{n}"
            out[key + "/dot"] = np.array([[_engine.dot_row(tid, rows[r], X[c]) for c in range(N_COLS)]
                                          for r in range(N_ROWS)], np.float32)
            for ncols in (1, 3, 4, 5, 8):
                out[key + f"/cols{ncols}"] = np.stack([_engine.dot_row_cols(tid, rows[r], X[:ncols])
                                                       for r in range(N_ROWS)])
            flat = np.ascontiguousarray(rows).reshape(-1)
            out[key + "/matvec"] = _engine.matvec(tid, flat, X[0], N_ROWS)
            for ncols in range(1, N_COLS + 1):
                out[key + f"/matmul{ncols}"] = _engine.matmul_rows(tid, flat, X[:ncols], N_ROWS)
    return out


def attn_outputs(rng) -> dict:
    out = {}
    for n in ATTN_N:
        for T in ATTN_T:
            keys = rng.standard_normal((T, n)).astype(np.float32)
            # Queries as the engine passes them (float values held in double) and full
            # double queries (the kernels' contract does not depend on the former).
            q32 = rng.standard_normal((4, n)).astype(np.float32).astype(np.float64)
            q64 = rng.standard_normal((4, n))
            e = np.exp(rng.standard_normal((4, T)))  # softmax weights: not float values
            key = f"attn/n{n}/T{T}"
            for nh in range(1, 5):
                out[key + f"/scores{nh}"] = _engine._attn_scores4(q32[:nh], keys)
                out[key + f"/scores{nh}_q64"] = _engine._attn_scores4(q64[:nh], keys)
                out[key + f"/wsums{nh}"] = _engine._attn_weighted_sums4(e[:nh], keys)
            out[key + "/dot"] = np.array([_engine._attn_dot(q32[0], keys[t]) for t in range(T)])
            out[key + "/dot_q64"] = np.array([_engine._attn_dot(q64[0], keys[t]) for t in range(T)])
            out[key + "/wsum"] = _engine._attn_weighted_sum(e[0], keys)
    return out


def main() -> None:
    rng = np.random.default_rng(20261201)
    with np.errstate(all="ignore"):
        out = quant_outputs(rng)
        out.update(attn_outputs(rng))
    out["_dispatch"] = np.array([_engine.quant_dispatch(), _engine._attn_kernels_name()])
    np.savez(sys.argv[1], **out)


if __name__ == "__main__":
    main()
