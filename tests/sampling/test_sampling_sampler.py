"""The C++ sampler against a plain float64 numpy statement of the same rules.

Rules (documented in engine/src/sampling/sampler.h): penalties (repetition CTRL-style, presence,
frequency) -> greedy if temperature <= 0 -> top-k -> temperature -> softmax -> top-p (smallest
prefix reaching p) -> min-p (relative to the best) -> renormalise -> draw walking the candidates in
descending-probability order (ties: lower id first).
"""
import numpy as np
import pytest

from ds4kit import _engine as E


def numpy_reference(logits, history, *, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0,
                    repetition_penalty=1.0, presence_penalty=0.0, frequency_penalty=0.0, penalty_last_n=-1):
    l = np.asarray(logits, dtype=np.float32).astype(np.float64)
    # The C++ side receives float32 parameters; use the same values.
    rp, pp, fp = (float(np.float32(x)) for x in (repetition_penalty, presence_penalty, frequency_penalty))
    hist = list(history) if penalty_last_n < 0 else list(history)[max(0, len(history) - penalty_last_n):]
    for tok in sorted(set(hist)):
        v = l[tok]
        if rp != 1.0:
            v = v / rp if v > 0 else v * rp
        v -= pp
        v -= fp * hist.count(tok)
        l[tok] = v
    if temperature <= 0:
        return np.array([int(np.argmax(l))]), np.array([1.0])
    order = sorted(range(len(l)), key=lambda i: (-l[i], i))
    if top_k > 0:
        order = order[:top_k]
    t = float(np.float32(temperature))
    z = np.array([l[i] / t for i in order])
    p = np.exp(z - z.max())
    p /= p.sum()
    keep = len(order)
    if top_p < 1.0:
        c = np.cumsum(p)
        keep = int(np.searchsorted(c, float(np.float32(top_p)), side="left")) + 1
        keep = min(keep, len(order))
    if min_p > 0:
        floor = float(np.float32(min_p)) * p[0]
        n = 1
        while n < keep and p[n] >= floor:
            n += 1
        keep = n
    p = p[:keep] / p[:keep].sum()
    return np.array(order[:keep]), p


CASES = [
    dict(temperature=0.0),
    dict(temperature=1.0),
    dict(temperature=0.6, top_k=40),
    dict(temperature=1.3, top_p=0.9),
    dict(temperature=0.8, min_p=0.05),
    dict(temperature=1.0, top_k=50, top_p=0.95, min_p=0.02),
    dict(temperature=0.7, repetition_penalty=1.3, presence_penalty=0.5, frequency_penalty=0.2),
    dict(temperature=0.0, repetition_penalty=2.0, penalty_last_n=3),
]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_distribution_matches_numpy_reference(case):
    rng = np.random.default_rng(7)
    vocab = 1000
    for trial in range(5):
        logits = (rng.standard_normal(vocab) * 3).astype(np.float32)
        history = rng.integers(0, vocab, size=20).tolist()
        s = E.Sampler(E.SamplingParams(seed=trial, **case), vocab)
        ids, probs = s.distribution(logits, history)
        want_ids, want_p = numpy_reference(logits, history, **case)
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_allclose(probs, want_p, rtol=1e-12, atol=1e-15)
        assert abs(probs.sum() - 1.0) < 1e-12


def test_penalties_follow_the_stated_rule():
    logits = np.array([2.0, -2.0, 1.0, 0.5], dtype=np.float32)
    s = E.Sampler(E.SamplingParams(repetition_penalty=2.0, presence_penalty=0.25, frequency_penalty=0.1), 4)
    got = s.penalised(logits, [0, 1, 1])
    # token 0: 2/2 - 0.25 - 0.1*1; token 1: -2*2 - 0.25 - 0.1*2; others untouched
    # atol 1e-7: the penalties travel as float32 (0.1f is not 0.1).
    np.testing.assert_allclose(got, [0.65, -4.45, 1.0, 0.5], rtol=0, atol=1e-7)
    # penalty_last_n=1 only sees the last token (1)
    s = E.Sampler(E.SamplingParams(repetition_penalty=2.0, penalty_last_n=1), 4)
    np.testing.assert_allclose(s.penalised(logits, [0, 1]), [2.0, -4.0, 1.0, 0.5])


def test_greedy_picks_lowest_id_on_ties_and_ignores_seed():
    logits = np.array([1.0, 3.0, 3.0, 0.0], dtype=np.float32)
    for seed in range(3):
        assert E.Sampler(E.SamplingParams(temperature=0, seed=seed), 4).sample(logits) == 1


def test_seeded_draws_are_reproducible_and_seed_dependent():
    rng = np.random.default_rng(3)
    logits = rng.standard_normal(500).astype(np.float32)

    def draws(seed):
        s = E.Sampler(E.SamplingParams(temperature=1.0, seed=seed), 500)
        return [s.sample(logits) for _ in range(200)]

    assert draws(11) == draws(11)
    assert draws(11) != draws(12)


def test_draw_frequencies_follow_the_distribution():
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05], dtype=np.float64)).astype(np.float32)
    s = E.Sampler(E.SamplingParams(temperature=1.0, seed=5), 4)
    n = 40000
    counts = np.bincount([s.sample(logits) for _ in range(n)], minlength=4)
    p = np.array([0.5, 0.3, 0.15, 0.05])
    sigma = np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(counts - n * p) < 5 * sigma), counts
    # top_k=2 never yields a token outside the top 2
    s = E.Sampler(E.SamplingParams(temperature=1.0, top_k=2, seed=5), 4)
    assert set(s.sample(logits) for _ in range(2000)) == {0, 1}


@pytest.mark.parametrize("kwargs,field", [
    (dict(top_p=0.0), "top_p"), (dict(top_p=1.5), "top_p"), (dict(min_p=-0.1), "min_p"),
    (dict(top_k=-1), "top_k"), (dict(repetition_penalty=0.0), "repetition_penalty"),
    (dict(temperature=float("inf")), "temperature"),
])
def test_bad_parameters_name_the_field(kwargs, field):
    with pytest.raises(E.ArgumentError, match=field):
        E.SamplingParams(**kwargs)


def test_bad_inputs_are_clear_errors():
    s = E.Sampler(E.SamplingParams(temperature=1.0), 4)
    with pytest.raises(E.ArgumentError, match="NaN at token id 2"):
        s.sample(np.array([0, 1, np.nan, 0], dtype=np.float32))
    with pytest.raises(E.ArgumentError, match="history token id 9"):
        E.Sampler(E.SamplingParams(repetition_penalty=1.1), 4).sample(np.zeros(4, np.float32), [9])
