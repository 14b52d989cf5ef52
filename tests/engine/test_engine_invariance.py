"""Batch and thread invariance (ds4kit principle 1): verify rows are bitwise identical to
decoding the same tokens one by one, for widths 1..8, at every thread count; prefill modes
agree. The oracle is the engine's own single-token decode, so these are exact (==) checks.

The prompt (reference tiny model: window 16, ratios 0/4/128, indexer top_k 3) is 136 tokens
so chunks of every width straddle ratio-4 boundaries, ring wraps, the ratio-128 boundary at
position 127, and indexer top-k selection."""
import numpy as np
import pytest

from engine_fixtures import engine_case_path, ref_tiny_path, synth_tiny_path, tokens

from ds4kit import _engine
from ds4kit.engine import Model

N_TOKENS = 136


@pytest.fixture(scope="module")
def decoded():
    model = _engine.Model(str(ref_tiny_path()), threads=1)
    toks = tokens(N_TOKENS, model.hparams["n_vocab"], seed=21)
    s = model.session(N_TOKENS)
    return toks, np.stack([s.decode(t) for t in toks])


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_verify_rows_equal_decode_for_every_width(decoded, threads):
    toks, want = decoded
    model = _engine.Model(str(ref_tiny_path()), threads=threads)
    assert model.threads == threads
    for width in range(1, 9):
        s = model.session(N_TOKENS)
        rows = [s.verify(toks[i:i + width]) for i in range(0, N_TOKENS, width)]
        got = np.concatenate(rows)
        assert got.shape == want.shape
        diff = np.flatnonzero(np.any(got != want, axis=1))
        assert diff.size == 0, f"width {width}, {threads} threads: rows {diff[:10].tolist()} differ from decode"
        assert s.pos == N_TOKENS


@pytest.mark.parametrize("threads", [2, 3])
def test_decode_bitwise_equal_across_thread_counts(decoded, threads):
    toks, want = decoded
    s = _engine.Model(str(ref_tiny_path()), threads=threads).session(N_TOKENS)
    got = np.stack([s.decode(t) for t in toks])
    assert np.array_equal(got, want)


def test_quantised_model_verify_equals_decode_across_threads():
    """Same property on the synth model (Q8_0/Q4_0 kernels, hash routing, ratios 0,0,4,128,4)."""
    path = synth_tiny_path()
    n = 20
    toks = tokens(n, 129280, seed=22)
    ref_model = _engine.Model(str(path), threads=1)
    s = ref_model.session(n)
    want = np.stack([s.decode(t) for t in toks])
    for threads, width in ((2, 8), (3, 5)):
        s = _engine.Model(str(path), threads=threads).session(n)
        got = np.concatenate([s.verify(toks[i:i + width]) for i in range(0, n, width)])
        assert np.array_equal(got, want), f"{threads} threads, width {width}"


def test_prefill_modes_and_continuation(decoded):
    toks, want = decoded
    model = Model.load(ref_tiny_path(), threads=2)
    for mode in ("exact", "batched"):
        s = model.session(N_TOKENS)
        s.decode(toks[0])            # start unaligned, so batched blocks get cut at ratio-4 boundaries
        last = s.prefill(toks[1:130], mode=mode)
        assert s.pos == 130
        assert np.array_equal(last, want[129]), mode
        # Decoding after a prefill continues exactly where one-by-one decode would be.
        assert np.array_equal(s.decode(toks[130]), want[130]), mode
        assert np.array_equal(s.verify(toks[131:136]), want[131:136]), mode


def test_verify_equals_decode_on_window128_case_with_and_without_roundings():
    """The real window (128) wraps and ratio-128 rows complete inside verify blocks."""
    path = engine_case_path("window128")
    n = 300
    model = _engine.Model(str(path), threads=2)
    toks = tokens(n, model.hparams["n_vocab"], seed=23)
    for fp8 in (True, False):
        s = model.session(n, fp8_kv=fp8, indexer_fp4=fp8)
        want = np.stack([s.decode(t) for t in toks])
        for width in (3, 8):
            s = model.session(n, fp8_kv=fp8, indexer_fp4=fp8)
            got = np.concatenate([s.verify(toks[i:i + width]) for i in range(0, n, width)])
            assert np.array_equal(got, want), f"fp8={fp8}, width {width}"


def test_prefill_blocks_longer_than_an_attention_step_equal_decode():
    """A batched prefill block (256 tokens) runs its attention 32 tokens a step between
    projections and experts that take the whole block: on the real window (128), from an
    unaligned start, across two blocks, it must land where decoding one by one does."""
    path = engine_case_path("window128")
    n = 300
    model = _engine.Model(str(path), threads=2)
    toks = tokens(n, model.hparams["n_vocab"], seed=26)
    s = model.session(n)
    want = np.stack([s.decode(t) for t in toks])
    s = model.session(n)
    s.decode(toks[0])
    last = s.prefill(toks[1:296], "batched")
    assert s.pos == 296
    assert np.array_equal(last, want[295])
    assert np.array_equal(s.verify(toks[296:300]), want[296:300])


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("width", [17, 32, 33, 70])
def test_wide_verify_equals_decode(decoded, threads, width):
    """Widths beyond one forward block (32 tokens) and beyond the window (16): the block's KV
    rows are all stored before its first token attends, so the backend's ring must still hold
    every token's own window, and a verify wider than a block is split into blocks."""
    toks, want = decoded
    s = _engine.Model(str(ref_tiny_path()), threads=threads).session(N_TOKENS)
    got = np.concatenate([s.verify(toks[i:i + width]) for i in range(0, N_TOKENS, width)])
    diff = np.flatnonzero(np.any(got != want, axis=1))
    assert diff.size == 0, f"width {width}, {threads} threads: rows {diff[:10].tolist()} differ from decode"


def test_state_memory_is_owned_per_session_and_grows_with_the_context_used():
    model = _engine.Model(str(ref_tiny_path()), threads=1)
    s = model.session(4096)
    empty = s.state_bytes
    assert empty > 0  # the window rings and compressor windows exist from the start
    s.prefill(tokens(600, model.hparams["n_vocab"], seed=25), "batched")
    assert s.state_bytes > empty  # compressed and indexer rows are held as they complete
    # Two sessions of one model do not share state: interleaving them changes nothing.
    toks = tokens(40, model.hparams["n_vocab"], seed=24)
    solo = model.session(64)
    want = np.stack([solo.decode(t) for t in toks[:20]])
    a, b = model.session(64), model.session(64)
    got = []
    for i in range(20):
        got.append(a.decode(toks[i]))
        b.decode(toks[20 + i])
    assert np.array_equal(np.stack(got), want)
    assert a.pos == 20 and b.pos == 20
