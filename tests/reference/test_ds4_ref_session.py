"""The reference session's state machinery against direct, stateless formulas.

One tiny model (ratios 0, 4, 128; window 16; indexer top_k 3) runs 300 tokens once;
each test recomputes one piece from the recorded intermediates with explicit loops
over windows / keys / heads instead of the session's rolling state."""
import math

import numpy as np
import pytest

from ds4_numpy_reference import ReferenceSession
from ds4_ref_numerics import (
    RopeParams, f16_round, fp4_e2m1_round_trip, fp8_kv_round_trip, hadamard_matrix, indexer_transform,
    norm_weighted, rope_tail,
)
from ds4_ref_tiny import tiny_weights

N_TOKENS = 300


def _tokens(n, vocab, seed=7):
    return list(np.random.default_rng(seed).integers(0, vocab, n))


@pytest.fixture(scope="module")
def run():
    w = tiny_weights(seed=0)
    s = ReferenceSession(w, max_ctx=N_TOKENS, trace=True)
    toks = _tokens(N_TOKENS, w.hp.n_vocab)
    logits = [s.step(t) for t in toks]
    return w, s, toks, logits


def _yarn(hp):
    return RopeParams(n_rot=hp.n_rot, freq_base=hp.compress_rope_freq_base, freq_scale=1 / hp.yarn_factor,
                      ext_factor=1.0, n_ctx_orig=hp.yarn_orig_ctx, beta_fast=hp.yarn_beta_fast,
                      beta_slow=hp.yarn_beta_slow)


def _direct_compressed_row(w, il, prefix, hs, k, r, Dc, rope, finish):
    """Row k of a compressor from the h of its tokens, straight from the spec's formula."""
    b = f"blk.{il}."
    W_kv, W_g, ape = w[b + prefix + "_kv.weight"], w[b + prefix + "_gate.weight"], w[b + prefix + "_ape.weight"]

    def kappa_g(t):
        return W_kv @ hs[t], W_g @ hs[t] + ape[t % r]

    pooled = np.zeros(Dc)
    for j in range(Dc):
        cands = []                                   # (score, value) pairs for column j
        if r == 4:
            if k > 0:
                for t in range(4 * (k - 1), 4 * k):
                    kap, g = kappa_g(t)
                    cands.append((g[j], kap[j]))
            for t in range(4 * k, 4 * k + 4):
                kap, g = kappa_g(t)
                cands.append((g[Dc + j], kap[Dc + j]))
        else:
            for t in range(r * k, r * k + r):
                kap, g = kappa_g(t)
                cands.append((g[j], kap[j]))
        top = max(c[0] for c in cands)
        num = sum(math.exp(sc - top) * v for sc, v in cands)
        den = sum(math.exp(sc - top) for sc, _ in cands)
        pooled[j] = num / den
    row = norm_weighted(pooled, w[b + prefix + "_norm.weight"], w.hp.rms_eps)
    row = rope_tail(row, r * k, rope)
    return f16_round(finish(row))


def test_logits_are_finite_and_vocab_sized(run):
    w, s, toks, logits = run
    assert all(l.shape == (w.hp.n_vocab,) and np.all(np.isfinite(l)) for l in logits)
    assert s.pos == N_TOKENS


def test_compressed_row_counts(run):
    w, s, _, _ = run
    assert len(s.layers[0].comp_rows) == 0
    assert len(s.layers[1].comp_rows) == len(s.layers[1].idx_rows) == N_TOKENS // 4
    assert len(s.layers[2].comp_rows) == N_TOKENS // 128


@pytest.mark.parametrize("k", [0, 1, 37, 74])
def test_ratio4_compressor_matches_direct_formula(run, k):
    w, s, _, _ = run
    hp = w.hp
    hs = [rec["h"] for rec in s.trace[1]]
    want = _direct_compressed_row(w, 1, "attn_compressor", hs, k, 4, hp.head_dim, _yarn(hp),
                                  lambda row: fp8_kv_round_trip(row, hp.n_rot))
    np.testing.assert_allclose(s.layers[1].comp_rows[k], want, rtol=1e-12, atol=1e-12)
    want_i = _direct_compressed_row(w, 1, "indexer_compressor", hs, k, 4, hp.idx_head_dim, _yarn(hp),
                                    lambda row: fp4_e2m1_round_trip(row @ hadamard_matrix(hp.idx_head_dim).T))
    np.testing.assert_allclose(s.layers[1].idx_rows[k], want_i, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [0, 1])
def test_ratio128_compressor_matches_direct_formula(run, k):
    w, s, _, _ = run
    hp = w.hp
    hs = [rec["h"] for rec in s.trace[2]]
    want = _direct_compressed_row(w, 2, "attn_compressor", hs, k, 128, hp.head_dim, _yarn(hp),
                                  lambda row: fp8_kv_round_trip(row, hp.n_rot))
    np.testing.assert_allclose(s.layers[2].comp_rows[k], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("il,p", [(0, 5), (0, 15), (0, 16), (0, 299), (1, 3), (1, 250), (2, 255), (2, 299)])
def test_attention_over_window_and_compressed_rows(run, il, p):
    """Keys = the stored kv of positions max(0,p-15)..p (the ring wraps at 16) plus the
    selected compressed rows; softmax with a sink; computed key by key."""
    w, s, _, _ = run
    hp = w.hp
    rec = s.trace[il][p]
    keys = [s.trace[il][t]["kv"] for t in range(max(0, p - hp.n_swa + 1), p + 1)]
    if hp.compress_ratios[il]:
        n_visible = (p + 1) // hp.compress_ratios[il]
        sel = rec["selected"]
        assert all(0 <= i < n_visible for i in sel)
        keys += [s.layers[il].comp_rows[i] for i in sel]
    sinks = w[f"blk.{il}.attn_sinks.weight"]
    for hd in range(hp.n_head):
        q = rec["Q"][hd]
        scores = [float(q @ k) / math.sqrt(hp.head_dim) for k in keys]
        top = max(scores + [sinks[hd]])
        num = sum(math.exp(sc - top) * k for sc, k in zip(scores, keys))
        den = sum(math.exp(sc - top) for sc in scores) + math.exp(sinks[hd] - top)
        np.testing.assert_allclose(rec["O"][hd], num / den, rtol=1e-11, atol=1e-13)


def test_ring_holds_the_last_window(run):
    w, s, _, _ = run
    W = w.hp.n_swa
    for il in range(w.hp.n_layer):
        for t in range(N_TOKENS - W, N_TOKENS):
            np.testing.assert_array_equal(s.layers[il].ring[t % W], s.trace[il][t]["kv"])


@pytest.mark.parametrize("p", [15, 16, 150, 299])
def test_indexer_selects_top_k_when_active(run, p):
    w, s, _, _ = run
    hp = w.hp
    rec = s.trace[1][p]
    n_c = (p + 1) // 4
    assert n_c > hp.idx_top_k                       # selection is active (context >> top_k * 4)
    b = "blk.1."
    q = (w[b + "indexer.attn_q_b.weight"] @ rec["q_lat"]).reshape(hp.idx_n_head, hp.idx_head_dim)
    q = indexer_transform(rope_tail(q, p, _yarn(hp)), fp4=True)
    wh = (w[b + "indexer.proj.weight"] @ rec["h"]) / math.sqrt(hp.idx_head_dim * hp.idx_n_head)
    scores = []
    for c in range(n_c):
        k = s.layers[1].idx_rows[c]
        scores.append(sum(wh[hd] * max(0.0, float(q[hd] @ k)) for hd in range(hp.idx_n_head)))
    np.testing.assert_allclose(rec["indexer_scores"], scores, rtol=1e-11, atol=1e-13)
    best = sorted(range(n_c), key=lambda c: -scores[c])[:hp.idx_top_k]
    assert sorted(best) == list(rec["selected"])


def test_indexer_uses_all_rows_until_top_k_is_exceeded(run):
    w, s, _, _ = run
    for p in range(4 * w.hp.idx_top_k + 3):
        n_c = (p + 1) // 4
        if n_c <= w.hp.idx_top_k:
            assert list(s.trace[1][p]["selected"]) == list(range(n_c))
    assert list(s.trace[2][200]["selected"]) == [0]  # ratio 128: every row, no indexer


def test_routing_hash_and_biased(run):
    w, s, toks, _ = run
    hp = w.hp
    for p in (0, 1, 100, 299):
        assert list(s.trace[0][p]["experts"]) == list(w["blk.0.ffn_gate_tid2eid.weight"][toks[p]])
        for il in (1, 2):
            rec = s.trace[il][p]
            b = f"blk.{il}."
            sc = np.sqrt(np.log1p(np.exp(w[b + "ffn_gate_inp.weight"] @ rec["h2"])))
            biased = sc + w[b + "exp_probs_b.bias"]
            want = sorted(range(hp.n_expert), key=lambda e: -biased[e])[:hp.n_expert_used]
            assert list(rec["experts"]) == want
            np.testing.assert_allclose(rec["expert_weights"], sc[want] / sc[want].sum() * 1.5, rtol=1e-12)


def test_rounding_switches(run):
    """D's semantics leave stored rows on the FP8 / FP4 grids; llama.cpp's do not, and
    the logits move by a small amount."""
    w, s, toks, logits = run
    hp = w.hp
    for il in range(hp.n_layer):
        kv = s.trace[il][-1]["kv"]
        np.testing.assert_array_equal(fp8_kv_round_trip(kv, hp.n_rot), kv)
    for row in s.layers[1].idx_rows[-3:]:
        np.testing.assert_array_equal(fp4_e2m1_round_trip(row), row)
    g = ReferenceSession(w, max_ctx=N_TOKENS, fp8_kv=False, indexer_fp4=False, trace=True)
    # Positions 0..14: the indexer is not active yet, so only the FP8 rounding differs.
    n = 15
    lg = [g.step(t) for t in toks[:n]]
    assert np.any(fp8_kv_round_trip(g.layers[0].ring[3], hp.n_rot) != g.layers[0].ring[3])
    for p in range(n):
        same_routing = all(list(g.trace[il][p]["experts"]) == list(s.trace[il][p]["experts"])
                           for il in range(hp.n_layer))
        diff = float(np.max(np.abs(lg[p] - logits[p])))
        assert diff > 0
        if same_routing:  # a routing flip is a discontinuity, not a rounding error
            assert diff < 0.05 * float(np.max(np.abs(lg[p])))


def test_step_rejects_bad_input():
    w = tiny_weights(seed=1)
    s = ReferenceSession(w, max_ctx=2)
    with pytest.raises(ValueError, match="vocab"):
        s.step(w.hp.n_vocab)
    s.step(0)
    s.step(1)
    with pytest.raises(ValueError, match="context full"):
        s.step(2)


def test_rewind_needs_the_whole_state():
    """Section 4: restoring a snapshot replays identically; moving only the position back
    does not (the ring rows and the r=4 compressor window were overwritten)."""
    w = tiny_weights(seed=2)
    toks = _tokens(60, w.hp.n_vocab, seed=3)
    alt = _tokens(10, w.hp.n_vocab, seed=4)
    s = ReferenceSession(w, max_ctx=80)
    for t in toks[:41]:
        s.step(t)
    snap = s.snapshot()
    want = [s.step(t) for t in toks[41:]]
    s.restore(snap)
    for t in alt:                                   # a rejected continuation
        s.step(t)
    s.restore(snap)
    np.testing.assert_array_equal(np.array([s.step(t) for t in toks[41:]]), np.array(want))
    s.restore(snap)
    for t in alt:
        s.step(t)
    s.pos = snap[0]                                 # naive rewind: position only
    naive = np.array([s.step(t) for t in toks[41:]])
    assert np.max(np.abs(naive - np.array(want))) > 1e-3


def test_skipping_logits_keeps_the_state_identical():
    w = tiny_weights(seed=5)
    toks = _tokens(30, w.hp.n_vocab, seed=6)
    a = ReferenceSession(w, max_ctx=40)
    b = ReferenceSession(w, max_ctx=40)
    for i, t in enumerate(toks):
        la = a.step(t)
        lb = b.step(t, want_logits=(i % 7 == 0))
        if i % 7 == 0:
            np.testing.assert_array_equal(la, lb)
        else:
            assert lb is None
    np.testing.assert_array_equal(a.step(1), b.step(1))
