"""Backend::row_top_k (the top-k of each row, where the logits are) and the session calls built
on it (Session.decode_top / verify_top), on the CPU backend. The oracle is a plain Python sort of
each row by (NaN last, value descending, index ascending): independent of the rank-word trick
the backends share (core/top_k.h). tests/gpu/test_gpu_top_k.py runs the same cases on a GPU."""
from __future__ import annotations

import numpy as np
import pytest

from ds4kit import _engine


def oracle_top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row sorted by (NaN last, value descending, index ascending): numpy's lexsort, whose
    float comparison takes -0 and +0 as equal."""
    nan = np.isnan(x)
    neg = np.where(nan, 0.0, -x.astype(np.float64))
    idx = np.broadcast_to(np.arange(x.shape[1]), x.shape)
    ids = np.lexsort((idx, neg, nan), axis=-1)[:, :k].astype(np.int32)
    return ids, np.take_along_axis(x, ids.astype(np.int64), axis=1)


def test_the_oracle_itself():
    """The oracle on rows written out by hand."""
    x = np.array([[1.0, 3.0, np.nan, 3.0, -0.0, 0.0, -np.inf]], np.float32)
    ids, vals = oracle_top_k(x, 7)
    assert ids.tolist() == [[1, 3, 0, 4, 5, 6, 2]]


def hard_rows(n: int, seed: int) -> np.ndarray:
    """Rows that test the order's corners: ties of the maximum (the lower index first), NaN
    (last), -0 beside +0 (equal), infinities, a row of equal values, a row of NaN but k values."""
    rng = np.random.default_rng(seed)
    rows = [rng.standard_normal(n).astype(np.float32) for _ in range(6)]
    top = float(rows[0].max())
    rows[0][rng.choice(n, size=min(4, n), replace=False)] = top  # the max four times
    rows[1][rng.choice(n, size=n // 3, replace=False)] = np.nan
    rows[2][:] = np.where(rng.random(n) < 0.5, np.float32(0.0), np.float32(-0.0))
    rows[3][rng.choice(n, size=min(2, n), replace=False)] = [np.inf, -np.inf][: min(2, n)]
    rows[4][:] = 1.5
    rows[5] = np.round(rows[5] * 2) / 2  # many equal values
    return np.stack(rows)


def check_backend(backend: str, n: int, ks: list[int], seed: int) -> None:
    x = hard_rows(n, seed)
    for k in ks:
        if k > n:
            continue
        ids, vals = _engine.row_top_k(x, k, backend)
        want_ids, want_vals = oracle_top_k(x, k)
        assert np.array_equal(ids, want_ids), f"{backend} n={n} k={k}: ids {ids} != {want_ids}"
        # The values are the row's own floats, bit for bit (NaN, -0 included).
        assert np.array_equal(vals.view(np.uint32), want_vals.view(np.uint32)), f"{backend} n={n} k={k}: values"


@pytest.mark.parametrize("n", [1, 7, 300, 4099])
def test_row_top_k_cpu_matches_the_sort(n):
    check_backend("cpu", n, [1, 2, 5, 64], seed=n)


def test_row_top_k_refuses_bad_k():
    x = np.zeros((2, 10), np.float32)
    for k in (0, 11, 65):
        with pytest.raises(_engine.ArgumentError, match=f"row_top_k: k {k} of rows of 10"):
            _engine.row_top_k(x, k, "cpu")
    with pytest.raises(_engine.ArgumentError, match="2-D"):
        _engine.row_top_k(np.zeros(10, np.float32), 1, "cpu")


def session_top_k_matches_logits(model_path, backend: str, n_tokens: int = 40) -> None:
    """decode_top / verify_top against the top-k of decode's / verify's logits from a twin
    session fed the same tokens, and the state after them the same (the next logits equal)."""
    m = _engine.Model(str(model_path), threads=0, backend=backend)
    V = m.hparams["n_vocab"]
    toks = [int(t) for t in np.random.default_rng(3).integers(0, V, n_tokens)]
    a, b = m.session(n_tokens + 16), m.session(n_tokens + 16)
    for i, t in enumerate(toks[:24]):  # decode: k 1 (greedy) and 2 (a margin) in turn
        k = 1 + i % 2
        ids, vals = a.decode_top(t, k)
        want_ids, want_vals = oracle_top_k(b.decode(t)[None, :], k)
        assert ids.tolist() == want_ids[0].tolist() and np.array_equal(vals, want_vals[0]), f"token {i}"
    ids, vals = a.verify_top(toks[24:], 8)
    want_ids, want_vals = oracle_top_k(b.verify(toks[24:]), 8)
    assert np.array_equal(ids, want_ids) and np.array_equal(vals, want_vals)
    assert a.pos == b.pos == n_tokens
    assert np.array_equal(a.decode(5), b.decode(5))
    with pytest.raises(_engine.ArgumentError, match="row_top_k"):
        a.decode_top(1, 0)
    assert a.pos == n_tokens + 1, "a refused decode_top changed the session"


def test_session_decode_top_matches_decode_logits_cpu(tiny_target):
    session_top_k_matches_logits(tiny_target, "cpu")


def greedy_chain_matches_decode_top(model_path, backend: str) -> None:
    """Session.decode_greedy(token, n) against n decode_top(., 1) calls on a twin session, each
    fed its own argmax: the same ids, the same tokens fed (token and the first n - 1 ids), the same
    state after (the next logits bitwise), also after rewinding a chain's tail; chains of
    1 to 32 one after another (the GPU replays one recorded step for all of them). Bad n, a
    session that captures layers and a chain past max_ctx are refused and change nothing."""
    m = _engine.Model(str(model_path), threads=0, backend=backend)
    V = m.hparams["n_vocab"]
    a, b = m.session(200), m.session(200)
    prompt = [int(t) for t in np.random.default_rng(11).integers(0, V, 9)]
    a.prefill(prompt, "batched")
    b.prefill(prompt, "batched")
    tok = 7
    for n in (1, 5, 32, 3, 16):
        got = a.decode_greedy(tok, n)
        want, t = [], tok
        for _ in range(n):
            t = int(b.decode_top(t, 1)[0][0])
            want.append(t)
        assert got.dtype == np.int32 and got.tolist() == want, f"chain of {n}"
        assert a.pos == b.pos and a.tokens == b.tokens
        tok = want[-1]
    a.rewind(6)  # a stop inside the last chain: its tail taken back
    b.rewind(6)
    assert np.array_equal(a.decode(tok), b.decode(tok)) and a.pos == b.pos
    pos = a.pos
    for bad in (0, 33):
        with pytest.raises(_engine.ArgumentError, match="decode_greedy of"):
            a.decode_greedy(1, bad)
    with pytest.raises(_engine.ArgumentError, match="outside the vocabulary"):
        a.decode_greedy(V, 2)
    assert a.pos == pos
    short = m.session(12)
    short.prefill(prompt, "batched")
    with pytest.raises(_engine.ArgumentError, match="exceeds max_ctx 12"):
        short.decode_greedy(1, 4)
    assert short.pos == 9 and short.decode_greedy(1, 3).shape == (3,) and short.pos == 12
    cap = m.session(64, capture_layers=[0])
    with pytest.raises(_engine.ArgumentError, match="captures"):
        cap.decode_greedy(1, 2)
    assert cap.pos == 0


def test_session_decode_greedy_matches_decode_top_cpu(tiny_target):
    greedy_chain_matches_decode_top(tiny_target, "cpu")
