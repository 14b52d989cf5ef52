"""Greedy speculative decoding is token for token target-only decoding (issue 9 item 2), with a
scripted drafter (acceptance known in advance) and with the DSpark drafter, at every width."""
import pytest

from ds4kit import _engine
from ds4kit.engine.generate import GenerationConfig, generate
from ds4kit.engine.speculative import Speculation, error_positions_for_rate

MAX_CTX = 512
N = 40


def plain(model, prompt, **kw):
    return generate(model.session(max_ctx=MAX_CTX), model.tokenizer, prompt, GenerationConfig(**kw))


def speculative(model, prompt, spec, **kw):
    s = model.session(max_ctx=MAX_CTX, **spec.session_options())
    res = generate(s, model.tokenizer, prompt, GenerationConfig(**kw), speculation=spec)
    return res, s


@pytest.fixture(scope="module")
def reference(spec_model, spec_prompt):
    return plain(spec_model, spec_prompt, max_tokens=N)


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8])
def test_scripted_without_errors_accepts_everything(spec_model, spec_prompt, reference, width):
    start = len(spec_prompt)
    spec = Speculation.scripted(reference.tokens, start, [], spec_model.n_vocab, width=width)
    res, s = speculative(spec_model, spec_prompt, spec, max_tokens=N)
    assert res.tokens == reference.tokens
    st = res.speculation
    # Every step verifies `width` tokens but the last (cut by max_tokens): all candidates accepted.
    assert st["accepted"] == st["verified"]
    assert st["emitted"] == N
    if width > 1:
        assert st["steps"] < N and st["tokens_per_forward"] > 1.0
    # The session ends where plain decoding's would: the prompt and every token but the last.
    assert s.pos == len(spec_prompt) + N - 1
    assert list(s.tokens)[start:] == reference.tokens[:-1]


def test_scripted_errors_are_rejected_exactly_where_placed(spec_model, spec_prompt, reference):
    start = len(spec_prompt)
    errors = [start + i for i in (1, 2, 7, 8, 9, 15, 22, 30)]
    spec = Speculation.scripted(reference.tokens, start, errors, spec_model.n_vocab, width=4)
    res, _ = speculative(spec_model, spec_prompt, spec, max_tokens=N)
    assert res.tokens == reference.tokens
    # Replay the rule independently: a step at pending index i drafts indices i+1 .. i+3 and
    # accepts up to the first error; the next pending index is the first unaccepted one.
    i, steps, verified, accepted = 0, 0, 0, 0
    while i < N - 1:
        width = min(4, N - 1 - i)  # the step's limit: what max_tokens leaves after index i
        cands = list(range(i + 1, i + width))
        steps += 1
        verified += len(cands)
        k = 0
        while k < len(cands) and start + cands[k] not in errors:
            k += 1
        accepted += k
        i += k + 1
    st = res.speculation
    assert (st["steps"], st["verified"], st["accepted"]) == (steps, verified, accepted)


@pytest.mark.parametrize("width", [0, 2, 4, 6, 8])
def test_dspark_greedy_is_target_only(spec_model, spec_prompt, reference, spec_drafter, width):
    spec = Speculation.dspark(spec_drafter, width=width)
    res, _ = speculative(spec_model, spec_prompt, spec, max_tokens=N)
    assert res.tokens == reference.tokens
    assert res.speculation["emitted"] == N
    if width:
        assert res.speculation["effective_width"] == min(width, 1 + spec_drafter.block_size)


def test_stop_token_inside_a_step_leaves_the_session_where_plain_would(spec_model, spec_prompt, reference):
    stop = reference.tokens[12]
    first = reference.tokens.index(stop)
    want = plain(spec_model, spec_prompt, max_tokens=N, stop_token_ids=(stop,))
    spec = Speculation.scripted(reference.tokens, len(spec_prompt), [], spec_model.n_vocab, width=8)
    res, s = speculative(spec_model, spec_prompt, spec, max_tokens=N, stop_token_ids=(stop,))
    assert res.tokens == want.tokens == reference.tokens[: first + 1]
    assert res.stop_reason == "eos"
    assert s.pos == len(spec_prompt) + first
    assert res.speculation["discarded"] >= 0 and res.speculation["emitted"] == first + 1


def test_thinking_budget_forces_the_same_token_at_the_same_index(spec_model, spec_prompt, reference):
    end = spec_model.token_id("</think>")
    kw = dict(max_tokens=N, thinking_budget=9, think_end_id=end)
    want = plain(spec_model, spec_prompt, **kw)
    ref = want.tokens
    spec = Speculation.scripted(ref, len(spec_prompt), [], spec_model.n_vocab, width=6)
    res, _ = speculative(spec_model, spec_prompt, spec, **kw)
    assert res.tokens == want.tokens and res.thinking_budget_hit_at == want.thinking_budget_hit_at == 9


def test_context_limit_stops_like_plain(spec_model, spec_prompt, reference):
    max_ctx = len(spec_prompt) + 10
    want = generate(spec_model.session(max_ctx=max_ctx), spec_model.tokenizer, spec_prompt,
                    GenerationConfig(max_tokens=N))
    spec = Speculation.scripted(reference.tokens, len(spec_prompt), [], spec_model.n_vocab, width=8)
    s = spec_model.session(max_ctx=max_ctx)
    res = generate(s, spec_model.tokenizer, spec_prompt, GenerationConfig(max_tokens=N), speculation=spec)
    assert res.tokens == want.tokens and res.stop_reason == want.stop_reason == "context"


def test_logprobs_rows_are_the_decode_rows(spec_model, spec_prompt, reference):
    want = plain(spec_model, spec_prompt, max_tokens=16, logprobs=3)
    spec = Speculation.scripted(reference.tokens, len(spec_prompt), [len(spec_prompt) + 5], spec_model.n_vocab,
                                width=5)
    res, _ = speculative(spec_model, spec_prompt, spec, max_tokens=16, logprobs=3)
    assert res.logprobs == want.logprobs  # float for float: verify rows are bitwise decode rows


def test_bad_widths_and_a_session_without_the_drafters_layers_are_refused(spec_model, spec_prompt, spec_drafter):
    with pytest.raises(ValueError, match="1..8"):
        Speculation.dspark(spec_drafter, width=9)
    spec = Speculation.dspark(spec_drafter, width=2)
    with pytest.raises(_engine.ArgumentError, match="capture_layers"):
        generate(spec_model.session(max_ctx=MAX_CTX), spec_model.tokenizer, spec_prompt,
                 GenerationConfig(max_tokens=4), speculation=spec)


def test_error_positions_for_rate_is_seeded_and_has_the_rate():
    e = error_positions_for_rate(100, 10_000, 0.7, seed=1)
    assert e == error_positions_for_rate(100, 10_000, 0.7, seed=1)
    assert abs(len(e) / 10_000 - 0.3) < 0.02 and min(e) >= 100
    assert error_positions_for_rate(0, 50, 1.0) == [] and len(error_positions_for_rate(0, 50, 0.0)) == 50
