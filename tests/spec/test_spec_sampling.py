"""Speculative sampling has plain sampling's distribution (issue 9 item 2), checked against an
independent numpy float64 distribution (temperature softmax over the top-k logits):

1. the acceptance rule alone, on hand-made logit rows, over 200,000 seeded trials;
2. the whole loop on the tiny model: over 800 seeds, the counts of each second and third
   token against the sum over seeds of the exact conditional probabilities given the tokens
   before it (decoded one by one in a separate session).

Each count must be within 5 standard deviations of its expectation. A wrong rule (accepting
every candidate the filter keeps, or drawing the correction from the full distribution instead
of the residual) is off by far more: the first test checks that this check would catch both."""
import numpy as np
import pytest

from ds4kit import _engine
from ds4kit.engine.generate import GenerationConfig, generate
from ds4kit.engine.speculative import Speculation


def filtered(logits, temperature, top_k):
    """The distribution plain sampling draws from: softmax(logits / T) over the top-k (ties by id)."""
    x = np.asarray(logits, dtype=np.float64)
    order = sorted(range(x.size), key=lambda i: (-x[i], i))[: top_k or x.size]
    p = np.zeros(x.size)
    z = np.exp(x[order] / temperature - x[order[0]] / temperature)
    p[order] = z / z.sum()
    return p


def within_5_sigma(counts, expected, var):
    var = np.maximum(var, 1e-12)
    z = np.abs(counts - expected) / np.sqrt(var)
    return float(z.max())


ROWS = np.array([[2.0, 1.5, 1.0, 0.2, -1.0, 0.5],
                 [0.1, 0.3, 2.2, 1.9, -0.4, 0.0],
                 [1.0, 1.0, 0.0, 0.0, 0.0, 3.0]], dtype=np.float32)


@pytest.mark.parametrize("draft,top_k", [([1, 3], 0), ([0, 2], 0), ([4, 2], 3), ([1, 4], 3)])
def test_the_rule_emits_the_target_distribution(draft, top_k):
    n, T = 200_000, 1.0
    params = _engine.SamplingParams(temperature=T, top_k=top_k, seed=7)
    acc, nxt = (np.asarray(a) for a in _engine._spec_accept(ROWS, draft, params, [], n))
    p0, p1 = filtered(ROWS[0], T, top_k), filtered(ROWS[1], T, top_k)
    first = np.where(acc >= 1, draft[0], nxt)
    counts = np.bincount(first, minlength=6).astype(float)
    assert within_5_sigma(counts, n * p0, n * p0 * (1 - p0)) < 5
    # Given the first candidate was accepted, the second token is distributed as row 1's.
    m = acc >= 1
    second = np.where(acc[m] >= 2, draft[1], nxt[m])
    k = int(m.sum())
    counts1 = np.bincount(second, minlength=6).astype(float)
    if k:
        assert within_5_sigma(counts1, k * p1, k * p1 * (1 - p1)) < 5
    # A candidate the filter drops is never accepted.
    if p0[draft[0]] == 0:
        assert k == 0

    # The check has the power to reject the two classic mistakes.
    c = draft[0]
    always = np.zeros(6)
    always[c] = 1.0 if p0[c] > 0 else 0.0
    if p0[c] > 0:
        assert within_5_sigma(n * always, n * p0, n * p0 * (1 - p0)) > 5
    wrong_residual = p0[c] * np.eye(6)[c] + (1 - p0[c]) * p0  # correction drawn from p0, not the residual
    assert within_5_sigma(n * wrong_residual, n * p0, n * p0 * (1 - p0)) > 5 or p0[c] in (0.0, 1.0)


def test_greedy_rule_uses_no_random_numbers():
    params = _engine.SamplingParams(temperature=0.0, seed=1)
    acc, nxt = _engine._spec_accept(ROWS, [0, 2], params, [], 10)
    assert list(acc) == [2] * 10 and list(nxt) == [5] * 10
    acc, nxt = _engine._spec_accept(ROWS, [0, 3], params, [], 3)
    assert list(acc) == [1] * 3 and list(nxt) == [2] * 3


def test_the_loop_samples_the_target_distribution(spec_model, spec_prompt):
    T, K, seeds = 1.3, 4, 800
    m = spec_model
    # Reference continuation for the scripted drafter: one plain sample (so candidates are often
    # plausible), with an error at the third position so rejections happen too.
    ref = generate(m.session(max_ctx=64), m.tokenizer, spec_prompt,
                   GenerationConfig(max_tokens=3, temperature=T, top_k=K, seed=12345)).tokens
    start = len(spec_prompt)
    base = m.session(max_ctx=64)
    first_logits = base.prefill(spec_prompt)
    snap = base.snapshot()

    counts = [dict(), dict()]
    expected = [dict(), dict()]
    var = [dict(), dict()]
    oracle = m.session(max_ctx=64)
    cond_cache: dict[tuple, np.ndarray] = {}

    def conditional(prefix):
        if prefix not in cond_cache:
            oracle.restore(snap)
            row = None
            for t in prefix:
                row = oracle.decode(t)
            cond_cache[prefix] = filtered(row, T, K)
        return cond_cache[prefix]

    for seed in range(seeds):
        spec = Speculation.scripted(ref, start, [start + 2], m.n_vocab, width=3)
        s = m.session(max_ctx=64)
        s.restore(snap)
        toks = generate(s, m.tokenizer, spec_prompt, GenerationConfig(max_tokens=3, temperature=T, top_k=K, seed=seed),
                        fed=len(spec_prompt), first_logits=first_logits, speculation=spec).tokens
        for j in (1, 2):
            p = conditional(tuple(toks[:j]))
            for x in np.flatnonzero(p):
                expected[j - 1][x] = expected[j - 1].get(x, 0.0) + p[x]
                var[j - 1][x] = var[j - 1].get(x, 0.0) + p[x] * (1 - p[x])
            counts[j - 1][toks[j]] = counts[j - 1].get(toks[j], 0) + 1
    for j in range(2):
        assert set(counts[j]) <= set(expected[j]), "a token the filter drops was emitted"
        ids = sorted(expected[j])
        c = np.array([counts[j].get(i, 0) for i in ids], dtype=float)
        e = np.array([expected[j][i] for i in ids])
        v = np.array([var[j][i] for i in ids])
        assert within_5_sigma(c, e, v) < 5
