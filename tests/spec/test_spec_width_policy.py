"""The width policy (engine/src/spec/width_policy.h) on scripted costs and acceptance: it picks
the width with the most expected tokens per second, computed here independently, and turns
speculation off when nothing beats plain decoding."""
import numpy as np
import pytest

from ds4kit import _engine

DECODE, SLOPE, DRAFT = 1.0, 0.1, 0.05


def verify_cost(w):
    return DECODE + SLOPE * (w - 1)


def best_width(a, max_width, draft=DRAFT):
    """argmax over w of E(w) / T(w): E = 1 + a + a^2 + .. (w - 1 terms), T = draft + verify(w)."""
    def speed(w):
        e = sum(a ** j for j in range(w))
        return e / (verify_cost(w) + (draft if w > 1 else 0.0))
    best = max(range(1, max_width + 1), key=speed)
    return best if speed(best) > 1.05 * speed(1) else 1


def drive(policy, accept_prob, steps, max_width=8, seed=0, draft=DRAFT):
    """Feed the policy what a run would: costs per verified width and Bernoulli acceptance."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(steps):
        d = policy.plan(i, 64)
        w = d["verified"]
        if w > 1:
            policy.record_draft(draft)
        policy.record_verify(w, verify_cost(w))
        if w > 1:
            k = 0
            while k < w - 1 and rng.random() < accept_prob:
                k += 1
            policy.record_accepted(w - 1, k)
        out.append(d)
    return out


def test_warmup_measures_decode_then_the_cheapest_speculative_width():
    p = _engine.WidthPolicy(0, 6)
    d = drive(p, 0.5, 2, max_width=6)
    assert [x["verified"] for x in d] == [1, 2] and {x["reason"] for x in d} == {"warmup"}
    # Unmeasured widths lie on the line through the measured ones.
    assert np.allclose(p.verify_costs(), [verify_cost(w) for w in range(1, 7)])


@pytest.mark.parametrize("a", [0.3, 0.6, 0.8, 0.95])
def test_steady_state_width_is_the_best_one(a):
    p = _engine.WidthPolicy(0, 8)
    p.record_verify(1, verify_cost(1))
    p.record_verify(8, verify_cost(8))
    p.record_draft(DRAFT)
    rng = np.random.default_rng(1)
    for _ in range(3000):
        k = 0
        while k < 7 and rng.random() < a:
            k += 1
        p.record_accepted(7, k)
    est = p.acceptance()
    assert abs(est[0] - a) < 0.1  # decayed counts: about the last 100 observations
    d = p.plan(0, 64)
    # The policy optimises on its estimate; the oracle on the same estimate must agree.
    def speed(w):
        e = 1.0 + sum(np.prod(est[:j]) for j in range(1, w))
        return e / (verify_cost(w) + (DRAFT if w > 1 else 0.0))
    want = max(range(1, 9), key=speed)
    want = want if speed(want) > 1.05 * speed(1) else 1
    assert d["planned"] == want
    assert abs(d["predicted_speedup"] - speed(want) / speed(1)) < 1e-9


def test_nothing_accepted_turns_it_off_with_rare_reprobes():
    p = _engine.WidthPolicy(0, 8)
    d = drive(p, 0.0, 600)
    spec = [x for x in d if x["verified"] > 1]
    # Warmup, the few steps it takes the estimate to fall, then re-probes at 16, 32, .. 256 gaps.
    assert len(spec) <= 12, [x["reason"] for x in spec]
    assert sum(x["reason"] == "off" for x in d) > 580
    assert any(x["reason"] == "reprobe" for x in d)


def test_everything_accepted_uses_the_widest_width():
    p = _engine.WidthPolicy(0, 8)
    d = drive(p, 1.0, 50)
    # It widens as deeper positions prove themselves (untried ones start at a prior of 1/2).
    widths = [x["verified"] for x in d]
    assert widths == sorted(widths) and all(w == 8 for w in widths[20:])
    assert best_width(1.0, 8) == 8


def test_expensive_drafts_turn_it_off_even_when_accepted():
    p = _engine.WidthPolicy(0, 8)
    d = drive(p, 0.5, 200, draft=5.0)  # a draft costs five decodes
    assert sum(x["verified"] > 1 for x in d) <= 12
    assert best_width(0.5, 8, draft=5.0) == 1


def test_limit_caps_the_width_and_fixed_widths_stay_fixed():
    p = _engine.WidthPolicy(5, 8)
    assert p.plan(0, 64)["verified"] == 5 and p.plan(0, 3)["verified"] == 3
    assert p.plan(0, 3)["reason"] == "fixed, limit"
    with pytest.raises(_engine.ArgumentError, match="1..8"):
        _engine.WidthPolicy(9, 8)


def test_low_confidence_shortens_a_step_and_a_short_draft_is_recorded():
    p = _engine.WidthPolicy(0, 8)
    drive(p, 1.0, 30)
    d = p.plan(0, 64, confidence=[0.99, 0.98, 0.01, 0.01, 0.01, 0.01, 0.01])
    assert d["planned"] == 8 and d["verified"] == 3 and "confidence" in d["reason"]
    d = p.plan(0, 64, drafted=2)
    assert d["verified"] == 3 and "short draft" in d["reason"]
