"""Session.rewind(n): taking back the last n positions leaves the session bitwise where a
session that never fed them stands (the oracle is that second session, fed the same kept
tokens). Checked where rewind is hard: spans that complete ratio-4 rows (and the ratio-4
compressor's window shift), a ratio-128 row, indexer rows, a window ring that has wrapped many
times, several rewinds in a row, and the deepest rewind allowed (32 positions back from the
highest position ever fed); beyond it, rewind refuses and changes nothing."""
import numpy as np
import pytest

from engine_fixtures import engine_case_path, synth_tiny_path, tokens

from ds4kit import _engine
from ds4kit.engine import Model

MAX_REWIND = 32


def test_engine_states_the_reach_the_design_gives():
    # Python (greedy_chain, the prefix-cache probe's reach, the llama.cpp session) reads it from here.
    assert _engine.MAX_REWIND == MAX_REWIND


@pytest.fixture(scope="module")
def tiny():
    # ratios 0,0,4,128,4; window 16 (wraps every 16 positions); indexer top_k 2 (selects early).
    return Model.load(synth_tiny_path(), threads=2)


@pytest.fixture(scope="module")
def window128():
    # ratios 0,4,128,4,128,0; the real window 128; top_k 16.
    return Model.load(engine_case_path("window128"), threads=2)


def _never_went_forward(model, kept, cont, max_ctx):
    """Logits of `cont` decoded one by one after feeding `kept` (no detour, no rewind)."""
    s = model.session(max_ctx)
    s.prefill(kept, mode="batched")
    return np.stack([s.decode(t) for t in cont])


@pytest.mark.parametrize("prefix, detour", [
    (125, 3),    # 125..127: completes the ratio-4 row at 127 and the ratio-128 row at 127
    (126, 5),    # crosses the ratio-128 boundary: positions 128-130 overwrite the early window slots
    (127, 1),    # exactly the completing token
    (128, 4),    # a whole ratio-4 window, starting on its boundary
    (130, 32),   # the deepest rewind, across a ratio-4 boundary 8 times and the ring twice
    (255, 9),    # the second ratio-128 row
    (61, 17),    # a wrapped window-16 ring, a block wider than the window
])
def test_rewind_equals_never_going_forward(tiny, prefix, detour):
    V = tiny.hparams["n_vocab"]
    kept, junk, cont = tokens(prefix, V, 1), tokens(detour, V, 2), tokens(6, V, 3)
    want = _never_went_forward(tiny, kept, cont, 400)
    s = tiny.session(400)
    s.prefill(kept, mode="batched")
    s.verify(junk)  # one forward over the detour: the drafted tokens that get rejected
    assert s.max_rewind == min(MAX_REWIND, prefix + detour)
    s.rewind(detour)
    assert s.pos == prefix
    got = np.stack([s.decode(t) for t in cont])
    assert np.array_equal(got, want)


def test_rewind_with_the_real_window_and_indexer_selection(window128):
    # 600 positions: the 128-ring has wrapped, 4 ratio-128 rows exist, the indexer (top_k 16)
    # selects among 150 rows. Detour of 7 across the ratio-4 boundary at 603.
    V = window128.hparams["n_vocab"]
    kept, junk, cont = tokens(598, V, 4), tokens(7, V, 5), tokens(5, V, 6)
    want = _never_went_forward(window128, kept, cont, 700)
    s = window128.session(700)
    s.prefill(kept, mode="batched")
    s.verify(junk)
    s.rewind(7)
    assert np.array_equal(np.stack([s.decode(t) for t in cont]), want)


def test_several_rewinds_in_a_row_and_decode_detours(tiny):
    # Speculative decoding's pattern: verify q, keep some, rewind the rest, again and again.
    V = tiny.hparams["n_vocab"]
    base, cont = tokens(100, V, 7), tokens(4, V, 8)
    s = tiny.session(300)
    s.prefill(base, mode="batched")
    kept = list(base)
    rng = np.random.default_rng(9)
    for q in (5, 3, 8, 2, 6):
        draft = [int(t) for t in rng.integers(0, V, q)]
        s.verify(draft)
        accept = int(rng.integers(0, q + 1))
        s.rewind(q - accept)
        kept += draft[:accept]
        assert s.pos == len(kept)
    # Also a detour fed by decode calls (one token per forward).
    for t in tokens(3, V, 10):
        s.decode(t)
    s.rewind(3)
    want = _never_went_forward(tiny, kept, cont, 300)
    assert np.array_equal(np.stack([s.decode(t) for t in cont]), want)


def test_rewind_limits_refuse_and_change_nothing(tiny):
    V = tiny.hparams["n_vocab"]
    s = tiny.session(200)
    s.prefill(tokens(40, V, 11), mode="batched")
    s.verify(tokens(MAX_REWIND, V, 12))                # positions 40..71: highest fed is 71
    assert s.max_rewind == MAX_REWIND
    with pytest.raises(_engine.ArgumentError, match="rewind"):
        s.rewind(MAX_REWIND + 1)
    with pytest.raises(_engine.ArgumentError, match="n >= 0"):
        s.rewind(-1)
    assert s.pos == 72
    s.rewind(MAX_REWIND)
    assert s.pos == 40 and s.max_rewind == 0             # the ring slots below 40 may be overwritten
    with pytest.raises(_engine.ArgumentError):
        s.rewind(1)
    s.rewind(0)
    assert s.pos == 40
    short = tiny.session(200)
    short.prefill(tokens(3, V, 13), mode="exact")
    assert short.max_rewind == 3                        # no further back than position 0
    with pytest.raises(_engine.ArgumentError):
        short.rewind(4)


def test_rewind_then_snapshot_and_restore(tiny):
    # A snapshot taken after a rewind restores to the rewound state (its high-water mark too).
    V = tiny.hparams["n_vocab"]
    kept, junk, cont = tokens(50, V, 14), tokens(6, V, 15), tokens(4, V, 16)
    s = tiny.session(200)
    s.prefill(kept, mode="batched")
    s.verify(junk)
    s.rewind(6)
    snap = s.snapshot()
    want = _never_went_forward(tiny, kept, cont, 200)
    s.verify(tokens(20, V, 17))
    s.restore(snap)
    assert s.pos == 50
    assert np.array_equal(np.stack([s.decode(t) for t in cont]), want)
