"""Session snapshots: restoring one and feeding the same tokens gives bitwise the logits the
session gave the first time (the oracle is the session's own first pass), whatever was fed in
between; a snapshot survives its session running on and can be restored many times; snapshots
of another model or of other session options are refused without touching the session."""
import numpy as np
import pytest

from engine_fixtures import engine_case_path, ref_tiny_path, tokens

from ds4kit import _engine
from ds4kit.engine import Model


@pytest.fixture(scope="module")
def model():
    return _engine.Model(str(ref_tiny_path()), threads=2)


def test_restore_replays_bitwise_after_other_tokens(model):
    V = model.hparams["n_vocab"]
    prompt, cont, other = tokens(150, V, 31), tokens(20, V, 32), tokens(45, V, 33)
    s = model.session(300)
    s.prefill(prompt, "batched")  # crosses ratio-4 and ratio-128 boundaries and wraps the window
    snap = s.snapshot()
    assert snap.pos == 150 and snap.bytes > 0
    want = np.stack([s.decode(t) for t in cont])
    for detour in (other, other[:7], []):
        s.restore(snap)
        assert s.pos == 150
        if detour:
            s.verify(detour)
        s.restore(snap)
        got = np.stack([s.decode(t) for t in cont])
        assert np.array_equal(got, want), f"detour of {len(detour)} tokens"


def test_snapshot_restores_into_another_session_of_the_same_model(model):
    V = model.hparams["n_vocab"]
    prompt, cont = tokens(90, V, 34), tokens(10, V, 35)
    a = model.session(200)
    a.prefill(prompt, "exact")
    snap = a.snapshot()
    want = a.verify(cont)
    b = model.session(200)
    b.restore(snap)
    assert b.pos == 90
    assert np.array_equal(b.verify(cont), want)


def test_foreign_snapshots_are_refused_and_leave_the_session_alone(model):
    V = model.hparams["n_vocab"]
    s = model.session(100)
    s.prefill(tokens(10, V, 36), "batched")
    want = s.snapshot()
    other_opts = model.session(100, fp8_kv=False).snapshot()
    other_ctx = model.session(50).snapshot()
    other_model = _engine.Model(str(engine_case_path("window128")), threads=1).session(100).snapshot()
    for bad, what in ((other_opts, "options"), (other_ctx, "options"), (other_model, "another model")):
        with pytest.raises(_engine.ArgumentError, match=what):
            s.restore(bad)
        assert s.pos == 10
    tok = tokens(1, V, 37)[0]
    after = s.decode(tok)
    s.restore(want)
    assert np.array_equal(s.decode(tok), after)


def test_facade_snapshot_round_trip():
    m = Model.load(ref_tiny_path(), threads=1)
    s = m.session(64)
    s.prefill([1, 2, 3, 4, 5], mode="batched")
    snap = s.snapshot()
    first = np.stack([s.decode(t) for t in (6, 7, 8)])  # completes a ratio-4 row at position 7
    s.restore(snap)
    s.verify([9, 10, 11, 12])  # a detour that completes a different row
    s.restore(snap)
    assert s.pos == 5 and s.state_bytes > 0
    assert np.array_equal(np.stack([s.decode(t) for t in (6, 7, 8)]), first)
