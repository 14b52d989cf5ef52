"""Step graphs (gpu_backend.cu): a decode or verify step is issued once per key, recorded the
second time and replayed after that, with the positions read from a device word. Replays must
compute exactly what issuing every launch computes.

The oracle is the same GPU backend with DS4KIT_GPU_GRAPHS=0 (every step issued as it comes; the
positions passed as kernel arguments, the grids sized for the step alone). On the small Q2_K model
the tokens run past the window (128), the indexer's first selection (position 68), two ratio-128
rows and a recording span boundary (256), so replays meet every branch a position takes: windows
that complete or not, a growing key count, the indexer on. The backend's counters must show that
replays happened (on the HIP-CPU emulation, which has no graphs, that every step was issued in
step form instead). Without a GPU the tests skip loudly (the `gpu` fixture).
"""
from __future__ import annotations

import numpy as np
import pytest

from test_gpu_forward import _path
from test_gpu_seam import _small, gpu  # noqa: F401  (gpu is a fixture)

from ds4kit import _engine

NAME = "small-q2k"


def _tokens() -> list[int]:
    n = 90 if _small() else 300
    return [int(t) for t in np.random.default_rng(17).integers(0, 1024, n)]


def _model(gpu_kind: str, graphs: bool, monkeypatch) -> _engine.Model:
    monkeypatch.setenv("DS4KIT_GPU_GRAPHS", "1" if graphs else "0")
    return _engine.Model(str(_path(NAME)), threads=0, backend=gpu_kind)


def test_replayed_steps_equal_issued_steps(gpu, monkeypatch):
    toks = _tokens()
    n = len(toks)
    plain = _model(gpu, False, monkeypatch)
    s = plain.session(n + 16)
    want = np.stack([s.decode(t) for t in toks])
    assert plain.backend_counters()["steps_recorded"] == 0

    g = _model(gpu, True, monkeypatch)
    s = g.session(n + 16)
    got = np.stack([s.decode(t) for t in toks])
    diff = np.flatnonzero(np.any(got != want, axis=1))
    assert diff.size == 0, f"replayed decode differs from issued decode at positions {diff[:10].tolist()}"
    c = g.backend_counters()
    if "HIP-CPU" in g.backend:
        assert c["steps_recorded"] == 0 and c["steps_issued"] == n, c
    else:
        # A key's first step is issued, its second recorded: a few keys (span, indexer, growths).
        assert c["steps_recorded"] >= 1 and c["steps_replayed"] >= n - 24, c

    # Rewind and feed again: the replays read the rewound positions.
    s.rewind(7)
    again = np.stack([s.decode(t) for t in toks[n - 7:]])
    assert np.array_equal(again, want[n - 7:]), "decode after rewind differs from the first pass"

    # Verify of every width 2-8, twice each, so each width's steps are replayed too.
    for width in range(2, 9):
        s = g.session(n + 16)
        rows = np.concatenate([s.verify(toks[i:i + width]) for i in range(0, n, width)])
        bad = np.flatnonzero(np.any(rows != want, axis=1))
        assert bad.size == 0, f"verify width {width} (replayed) rows {bad[:10].tolist()} differ from decode"
    if "HIP-CPU" not in g.backend:
        assert g.backend_counters()["steps_replayed"] > c["steps_replayed"] + 7 * 8


def test_two_sessions_keep_their_own_steps(gpu, monkeypatch):
    """Steps of two sessions interleaved (a target and a second conversation) replay each
    session's own buffers and state: the same logits as each session alone."""
    toks = _tokens()[:80]
    g = _model(gpu, True, monkeypatch)
    alone = g.session(100)
    want = np.stack([alone.decode(t) for t in toks])
    a, b = g.session(100), g.session(100)
    got_a, got_b = [], [b.decode(toks[0])]  # b runs one position ahead of a
    for i, t in enumerate(toks):
        got_a.append(a.decode(t))
        if i + 1 < len(toks):
            got_b.append(b.decode(toks[i + 1]))
    assert np.array_equal(np.stack(got_a), want), "session a's replays differ from a session alone"
    assert np.array_equal(np.stack(got_b), want), "session b's replays differ from a session alone"



def test_a_drafter_bind_drops_the_recordings(gpu, monkeypatch, tmp_path):
    """Attaching a DSpark drafter binds the weight table again (the target's copies are replaced):
    recordings made before must not be replayed with the old copies' addresses."""
    from ds4kit.synth import preset, write_drafter

    toks = _tokens()[:60]
    plain = _model(gpu, False, monkeypatch)
    s = plain.session(80)
    want = np.stack([s.decode(t) for t in toks])
    g = _model(gpu, True, monkeypatch)
    s = g.session(80)
    first = [s.decode(t) for t in toks[:30]]
    drafter = tmp_path / "dspark.gguf"
    write_drafter(drafter, preset("small").replace(vocab_size=1024, draft_mask_token_id=1023), seed=3, progress=False)
    _engine.Drafter.load(str(drafter), g)  # binds the target's table plus its own
    rest = [s.decode(t) for t in toks[30:]]
    got = np.stack(first + rest)
    bad = np.flatnonzero(np.any(got != want, axis=1))
    assert bad.size == 0, f"decode after a drafter's bind differs at positions {bad[:10].tolist()}"
