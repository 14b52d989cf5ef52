"""Runs in a subprocess (so DS4KIT_CPU_FEATURES takes effect for the whole
process) and measures, for every quant type with kernels, the dot kernels
against a float64 numpy dot of the independently dequantised row. Prints one
JSON object; test_quant_dot.py makes the assertions."""
import json
import sys
from pathlib import Path

import gguf
import numpy as np
from gguf.quants import dequantize as gguf_dequantize

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quant_rocmfp_reference as rocmfp  # noqa: E402

from ds4kit import _engine  # noqa: E402

N_QUANT = 2048         # elements per row for block types
N_FLOAT = 2048 + 37    # float types: exercises the < 16 and < 8 element tails
N_COLS = 8
N_ROWS = 6

# Where the f16 super-block scales live, for types gguf-py cannot quantise: random
# bytes get realistic finite scales there.
F16_SCALE_OFFSETS = {12: (0, 2), 10: (80, 82), 16: (0,)}


def make_rows(type_id: int, n: int, n_rows: int, rng) -> np.ndarray:
    """n_rows rows of n elements of type_id as uint8, shape (n_rows, row_bytes)."""
    if type_id in rocmfp.LAYOUT:
        block_bytes = rocmfp.LAYOUT[type_id][0]
        return rng.integers(0, 256, size=(n_rows, n // 32 * block_bytes), dtype=np.uint8)
    qtype = gguf.GGMLQuantizationType(type_id)
    data = rng.standard_normal((n_rows, n)).astype(np.float32)
    if type_id == 30:  # BF16 by truncation (gguf-py rounds; either is a valid BF16 row)
        return (data.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(n_rows, -1)
    if type_id in F16_SCALE_OFFSETS:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, size=(n_rows, n // block, size), dtype=np.uint8)
        for off in F16_SCALE_OFFSETS[type_id]:
            d = rng.uniform(1e-3, 5e-2, size=raw.shape[:2]).astype(np.float16)
            raw[:, :, off:off + 2] = d.view(np.uint8).reshape(*raw.shape[:2], 2)
        return raw.reshape(n_rows, -1)
    raw = gguf.quants.quantize(data, qtype)
    return np.ascontiguousarray(raw).view(np.uint8).reshape(n_rows, -1)


def reference_row(type_id: int, raw: np.ndarray) -> np.ndarray:
    if type_id in rocmfp.LAYOUT:
        return rocmfp.dequantize(raw, type_id)
    return gguf_dequantize(raw, gguf.GGMLQuantizationType(type_id)).reshape(-1)


def measure(type_id: int, rng) -> dict:
    n = N_FLOAT if type_id in (0, 1, 30) else N_QUANT
    rows = make_rows(type_id, n, N_ROWS, rng)
    X_wide = rng.standard_normal((N_COLS, n + 13)).astype(np.float32)
    X_wide[:, n:] = np.nan  # must never be read
    X = np.ascontiguousarray(X_wide[:, :n])
    worst = 0.0
    dots = []
    for r in range(N_ROWS):
        w = reference_row(type_id, rows[r]).astype(np.float64)
        for c in range(N_COLS):
            got = _engine.dot_row(type_id, rows[r], X[c], name=f"worker.{type_id}")
            dots.append(got)
            ref = float(np.dot(w, X[c].astype(np.float64)))
            bound = float(np.sum(np.abs(w * X[c])))
            worst = max(worst, abs(got - ref) / bound if bound else abs(got - ref))
    # Column invariance: each column of dot_row_cols == dot_row on it, for every ncols.
    invariant = True
    for r in range(N_ROWS):
        single = np.array([_engine.dot_row(type_id, rows[r], X[c]) for c in range(N_COLS)], np.float32)
        for ncols in range(1, N_COLS + 1):
            multi = _engine.dot_row_cols(type_id, rows[r], X[:ncols])
            invariant &= bool(np.array_equal(multi.view(np.uint32), single[:ncols].view(np.uint32)))
        # and independent of the column's position among the others (X[::-1] is a
        # negative-stride view the binding copies)
        rev = _engine.dot_row_cols(type_id, rows[r], X[::-1])[::-1]
        invariant &= bool(np.array_equal(rev.view(np.uint32), single.view(np.uint32)))
        # and of the column stride (ldx > n: columns are rows of a wider array)
        strided = _engine.dot_row_cols(type_id, rows[r], X_wide[:, :n])
        invariant &= bool(np.array_equal(strided.view(np.uint32), single.view(np.uint32)))
    again = [_engine.dot_row(type_id, rows[r], X[c]) for r in range(N_ROWS) for c in range(N_COLS)]
    mv = _engine.matvec(type_id, rows.reshape(-1), X[0], N_ROWS)
    mv_single = np.array([_engine.dot_row(type_id, rows[r], X[0]) for r in range(N_ROWS)], np.float32)
    return {
        "n": n,
        "matmul_equal": matmul_equal(type_id, rng),
        "worst_rel_err": worst,
        "cols_invariant": invariant,
        "deterministic": again == dots,
        "matvec_equal": bool(np.array_equal(mv.view(np.uint32), mv_single.view(np.uint32))),
    }


def matmul_equal(type_id: int, rng) -> bool:
    """The engine's matmul kernel (matmul_rows; AVX-512 register tiles where n % 16 == 0 and the
    CPU has them; for 1-4 columns of Q8_0/Q4_0/F16 the fused decoders) gives every element exactly
    dot_row's bits, for every column count."""
    n = 2048  # a multiple of 16 and of every block size, so the tiled path runs
    # 21 rows: the fused few-column path's 8-row tiles (twice), a 4-row tile and a 1-row tail.
    n_rows = 21
    rows = make_rows(type_id, n, n_rows, rng)
    X = rng.standard_normal((N_COLS, n)).astype(np.float32)
    single = np.array([[_engine.dot_row(type_id, rows[r], X[c]) for r in range(n_rows)] for c in range(N_COLS)],
                      np.float32)
    ok = True
    for ncols in range(1, N_COLS + 1):
        got = _engine.matmul_rows(type_id, np.ascontiguousarray(rows).reshape(-1), X[:ncols], n_rows)
        ok &= bool(np.array_equal(got.view(np.uint32), single[:ncols].view(np.uint32)))
    return ok


def rocmfp_scales_exact() -> bool:
    """Every scale byte through the dot path: a Q8_0_ROCMFPX block with code 1
    first and x = e_0 must give exactly s(e) (the SIMD path uses its own table)."""
    x = np.zeros(32, np.float32)
    x[0] = 1.0
    got = [_engine.dot_row(103, np.array([1] + [0] * 31 + [e], np.uint8), x) for e in range(256)]
    return bool(np.array_equal(np.array(got, np.float32), rocmfp.scale(np.arange(256))))


def main() -> None:
    ids = [t["id"] for t in _engine.qtypes() if t["kernels"]]
    rng = np.random.default_rng(20261129)
    with np.errstate(all="ignore"):
        results = {str(i): measure(i, rng) for i in ids}
    print(json.dumps({"dispatch": _engine.quant_dispatch(), "cpu": _engine.cpu_features(), "results": results,
                      "rocmfp_scales_exact": rocmfp_scales_exact()}))


if __name__ == "__main__":
    main()
