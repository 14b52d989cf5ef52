"""The generation loop on a real (tiny, synthetic) model, checked against direct session calls."""
import numpy as np
import pytest

from ds4kit.chat.markers import THINK_CLOSE
from ds4kit.engine.generate import GenerationConfig, generate, top_logprobs
from ds4kit.engine import Model

MAX_CTX = 256


@pytest.fixture(scope="module")
def rt(tiny_target):
    return Model.load(tiny_target, threads=2)


@pytest.fixture(scope="module")
def prompt(rt):
    return rt.encode("<｜begin▁of▁sentence｜><｜User｜>Write a haiku about rain.<｜Assistant｜></think>")


def run(rt, prompt, max_ctx=MAX_CTX, **kw):
    return generate(rt.session(max_ctx=max_ctx), rt.tokenizer, prompt, GenerationConfig(**kw))


def test_greedy_equals_the_argmax_chain(rt, prompt):
    res = run(rt, prompt, max_tokens=8)
    s = rt.session(max_ctx=MAX_CTX)
    logits = s.prefill(prompt, "exact")
    want = []
    for _ in range(8):
        tok = int(np.argmax(logits))
        want.append(tok)
        logits = s.decode(tok)
    assert res.tokens == want
    assert res.stop_reason == "max_tokens" and len(res.token_times_s) == 8
    assert res.text == rt.decode(want)


class _CountingSession:
    """A session that counts which decode call the loop made (everything else passes through)."""

    def __init__(self, session):
        self._s, self.calls = session, {"decode": 0, "decode_top": 0}

    def __getattr__(self, name):
        if name in self.calls:
            self.calls[name] += 1
        return getattr(self._s, name)


def test_greedy_reads_ids_not_logits_and_matches_the_logits_loop(rt, prompt):
    """Plain greedy decoding (no penalties, no logprobs) asks the session for the argmax
    (decode_top) instead of the logits; the tokens equal those of the logits loop, which
    logprobs select (a forced end of thinking included)."""
    budget = {"thinking_budget": 5, "think_end_id": rt.token_id(THINK_CLOSE)}
    fast = _CountingSession(rt.session(max_ctx=MAX_CTX))
    a = generate(fast, rt.tokenizer, prompt, GenerationConfig(max_tokens=24, **budget))
    assert fast.calls == {"decode": 0, "decode_top": 23}
    slow = _CountingSession(rt.session(max_ctx=MAX_CTX))
    b = generate(slow, rt.tokenizer, prompt, GenerationConfig(max_tokens=24, logprobs=2, **budget))
    assert slow.calls == {"decode": 23, "decode_top": 0}
    assert a.tokens == b.tokens and a.text == b.text
    assert a.thinking_budget_hit_at == b.thinking_budget_hit_at == 5


def test_seeded_sampling_is_reproducible_and_seed_dependent(rt, prompt):
    a = run(rt, prompt, max_tokens=10, temperature=1.0, seed=3)
    b = run(rt, prompt, max_tokens=10, temperature=1.0, seed=3)
    c = run(rt, prompt, max_tokens=10, temperature=1.0, seed=4)
    assert a.tokens == b.tokens
    assert a.tokens != c.tokens


def test_stop_token_ends_generation_and_is_not_in_the_text(rt, prompt):
    first = run(rt, prompt, max_tokens=3).tokens
    res = run(rt, prompt, max_tokens=10, stop_token_ids=(first[1],))
    assert res.tokens == first[:2] and res.stop_reason == "eos" and res.stop_detail == first[1]
    assert res.text == rt.decode(first[:1])


def test_stop_string_truncates_the_text(rt, prompt):
    greedy = run(rt, prompt, max_tokens=6)
    piece = rt.decode(greedy.tokens[2:3])
    assert piece.strip(), "need a visible piece to stop on"
    res = run(rt, prompt, max_tokens=6, stop_strings=(piece,))
    assert res.stop_reason == "stop_string"
    assert res.text == greedy.text[: greedy.text.index(piece)]
    assert len(res.tokens) <= 3


def test_context_limit_stops_cleanly(rt, prompt):
    res = run(rt, prompt, max_ctx=len(prompt) + 3, max_tokens=10)
    assert res.stop_reason == "context"
    assert len(res.tokens) == 4  # 3 decoded positions fill the context; the 4th token is sampled, not fed


def test_thinking_budget_forces_the_end_of_thinking(rt, prompt):
    end = rt.token_id(THINK_CLOSE)
    res = run(rt, prompt, max_tokens=6, thinking_budget=2, think_end_id=end)
    assert res.tokens[2] == end and res.thinking_budget_hit_at == 2
    free = run(rt, prompt, max_tokens=6)
    assert res.tokens[:2] == free.tokens[:2]


def test_logprobs_are_the_log_softmax_of_the_logits(rt, prompt):
    res = run(rt, prompt, max_tokens=4, logprobs=5)
    s = rt.session(max_ctx=MAX_CTX)
    logits = s.prefill(prompt, "exact")
    for row, tok in zip(res.logprobs, res.tokens):
        x = logits.astype(np.float64)
        lp = x - (x.max() + np.log(np.exp(x - x.max()).sum()))
        best = np.argsort(-lp, kind="stable")[:5]
        assert [t for t, _ in row["top"]] == best.tolist()
        np.testing.assert_allclose([v for _, v in row["top"]], lp[best], rtol=0, atol=1e-9)
        assert row["logprob"] == pytest.approx(lp[tok], abs=1e-9)
        assert row["top2_margin"] == pytest.approx(lp[best[0]] - lp[best[1]], abs=1e-9)
        logits = s.decode(tok)


def test_top_logprobs_ties_prefer_lower_ids():
    _, top = top_logprobs(np.array([1.0, 3.0, 3.0, 0.0], dtype=np.float32), 3)
    assert [t for t, _ in top] == [1, 2, 0]


def test_bad_config_is_refused(rt, prompt):
    with pytest.raises(ValueError, match="max_tokens"):
        run(rt, prompt, max_tokens=-1)
    with pytest.raises(ValueError, match="think_end_id"):
        run(rt, prompt, max_tokens=2, thinking_budget=1)
    with pytest.raises(ValueError, match="empty"):
        run(rt, [], max_tokens=2)


def test_should_stop_returns_what_was_generated(rt, prompt):
    full = run(rt, prompt, max_tokens=8)
    seen = []
    res = generate(rt.session(max_ctx=MAX_CTX), rt.tokenizer, prompt, GenerationConfig(max_tokens=8),
                   on_token=lambda ev: seen.append(ev.token), should_stop=lambda: len(seen) >= 3)
    assert res.stop_reason == "interrupted" and res.stop_detail == 3
    assert res.tokens == seen == full.tokens[:3]
    assert len(res.token_times_s) == 3 and res.text == rt.decode(full.tokens[:3])
    early = generate(rt.session(max_ctx=MAX_CTX), rt.tokenizer, prompt, GenerationConfig(max_tokens=8),
                     should_stop=lambda: True)
    assert early.stop_reason == "interrupted" and early.tokens == [] and early.prefill_s == 0.0


@pytest.mark.parametrize("field, value", [("temperature", -1.0), ("top_p", 0.0), ("top_p", 1.5), ("min_p", 2.0),
                                          ("top_k", -1), ("repetition_penalty", 0.0), ("seed", -1),
                                          ("presence_penalty", float("nan"))])
def test_out_of_range_sampling_is_refused(rt, prompt, field, value):
    with pytest.raises(ValueError, match=field):
        run(rt, prompt, max_tokens=2, **{field: value})


@pytest.mark.parametrize("chain", [2, 5, 16, 32])
def test_chained_greedy_equals_one_by_one_and_leaves_the_same_session(rt, prompt, chain):
    """Chains of greedy steps on the device (a GPU's default; forced here on the CPU) give the
    tokens, text and stop of one-by-one decoding, and take back what they fed past the stop, so the
    session ends where one-by-one decoding's does (the same tokens fed, the next logits bitwise):
    at max_tokens, a stop token and a stop string inside a chain, a forced end of thinking, the
    context's end and an interrupt."""
    first = run(rt, prompt, max_tokens=12).tokens
    end = rt.token_id(THINK_CLOSE)
    cases = [
        ({"max_tokens": 24, "thinking_budget": 5, "think_end_id": end}, MAX_CTX, None),
        ({"max_tokens": 40, "stop_token_ids": (first[9],)}, MAX_CTX, None),
        ({"max_tokens": 40, "stop_strings": (rt.decode(first[7:8]),)}, MAX_CTX, None),
        ({"max_tokens": 40}, len(prompt) + 11, None),
        ({"max_tokens": 40}, MAX_CTX, lambda seen: len(seen) >= 6),
        ({"max_tokens": 0}, MAX_CTX, None),
    ]
    for kw, max_ctx, stop_after in cases:
        out = {}
        for c in (1, chain):
            seen: list[int] = []
            s = rt.session(max_ctx=max_ctx)
            s.greedy_chain = c
            res = generate(s, rt.tokenizer, prompt, GenerationConfig(**kw), on_token=lambda ev: seen.append(ev.token),
                           should_stop=(lambda: stop_after(seen)) if stop_after else None)
            out[c] = (res, s)
        (a, sa), (b, sb) = out[1], out[chain]
        assert (b.tokens, b.text, b.stop_reason, b.stop_detail) == (a.tokens, a.text, a.stop_reason, a.stop_detail), kw
        assert sb.pos == sa.pos and sb.tokens == sa.tokens, kw
        assert len(b.token_times_s) == len(b.tokens)
        if sa.pos < max_ctx:
            assert np.array_equal(sb.decode(3), sa.decode(3)), kw


def test_greedy_chain_is_bounded():
    from ds4kit.engine.session import Session

    s = Session(native=None)
    assert s.greedy_chain == 1  # no model: the CPU default
    for bad in (0, 33):
        with pytest.raises(ValueError, match="greedy_chain must be 1..32"):
            s.greedy_chain = bad
