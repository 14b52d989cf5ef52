"""Multi-turn conversations through the prefix cache: every reply is identical to the
cache-off run (the oracle), the second and later turns reuse at least their turn boundary, the
actual reuse never exceeds the expected reuse (the longest common prefix with what the run
processed before), an edited earlier turn misses, and a reply the file gives is not generated."""
import pytest

from ds4kit.chat.markers import EOS
from ds4kit.engine import Model
from ds4kit.engine.conversation import common_prefix, run_conversation
from ds4kit.engine.generate import GenerationConfig, generate
from ds4kit.engine.prefix_cache import PrefixCache

OPTS = {"max_ctx": 1024}


@pytest.fixture(scope="module")
def model(tiny_target):
    return Model.load(tiny_target, threads=2)


def _cfg(model, **kw):
    return GenerationConfig(max_tokens=12, stop_token_ids=(model.token_id(EOS),), prefill_mode="batched", **kw)


CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Name a colour."},
    {"role": "user", "content": "Another one, please, and say why you like it."},
    {"role": "user", "content": "Thanks. Now a number between one and ten."},
]


@pytest.mark.parametrize("thinking", [False, True])
def test_cached_run_gives_the_cache_off_answers_and_reuses_turns(model, thinking):
    cfg = _cfg(model, thinking_budget=4 if thinking else None,
               think_end_id=model.token_id("</think>") if thinking else None)
    off = run_conversation(model, CONVERSATION, cfg, session_options=OPTS, thinking=thinking)
    cache = PrefixCache(model, OPTS)
    on = run_conversation(model, CONVERSATION, cfg, session_options=OPTS, cache=cache, thinking=thinking)
    assert [t.index for t in on] == [1, 2, 3] == [t.index for t in off]
    for a, b in zip(on, off):
        assert a.prompt_ids == b.prompt_ids
        assert a.result.tokens == b.result.tokens          # identical answers
        assert a.actual_reuse <= a.expected_reuse
    assert on[0].actual_reuse == 0
    for k in (1, 2):
        prev = on[k - 1].prompt_ids
        # The whole previous prompt (thinking: up to its final <think>, which the next rendering
        # replaces), and with the reply's snapshot and a rewind exactly the ideal reuse.
        assert on[k].actual_reuse >= len(prev) - (1 if thinking else 0), (k, on[k].actual_reuse, len(prev))
        assert on[k].actual_reuse == on[k].expected_reuse
        # The runner prefilled the whole rest of the prompt itself, snapshotting its end.
        assert on[k].result.fed == len(on[k].prompt_ids) and len(on[k].prompt_ids) in on[k].snapshots_taken


def test_expected_reuse_is_the_common_prefix_with_earlier_streams(model):
    cfg = _cfg(model)
    turns = run_conversation(model, CONVERSATION, cfg, session_options=OPTS)
    first = turns[0].prompt_ids + turns[0].result.tokens
    assert turns[1].expected_reuse == common_prefix(turns[1].prompt_ids, first)
    assert turns[1].expected_reuse >= len(turns[0].prompt_ids) - 1


def test_a_given_reply_is_not_generated_and_an_edited_turn_misses(model):
    cfg = _cfg(model)
    cache = PrefixCache(model, OPTS)
    conv = [{"role": "user", "content": "Say hi."}, {"role": "assistant", "content": "Hi."},
            {"role": "user", "content": "Again."}]
    turns = run_conversation(model, conv, cfg, session_options=OPTS, cache=cache)
    assert [t.index for t in turns] == [2]
    edited = [{"role": "user", "content": "Say hello."}] + conv[1:]
    again = run_conversation(model, edited, cfg, session_options=OPTS, cache=cache)
    # Only the BOS and template prefix before the edited text can match.
    assert again[0].actual_reuse < 5


def test_generate_with_a_fed_prefix_equals_a_cold_generate(model):
    ids = model.encode(model.render_chat([{"role": "user", "content": "Count to five."}]))
    cfg = _cfg(model, repetition_penalty=1.3)  # penalties must still see the whole prompt
    cold = generate(model.session(**OPTS), model.tokenizer, ids, cfg)
    s = model.session(**OPTS)
    s.prefill(ids[:5], "batched")
    warm = generate(s, model.tokenizer, ids, cfg, fed=5)
    assert warm.tokens == cold.tokens and warm.fed == 5 and warm.prefilled == len(ids) - 5
    s2 = model.session(**OPTS)
    logits = s2.prefill(ids, "batched")
    whole = generate(s2, model.tokenizer, ids, cfg, fed=len(ids), first_logits=logits)
    assert whole.tokens == cold.tokens
    with pytest.raises(ValueError, match="fed"):
        generate(model.session(**OPTS), model.tokenizer, ids, cfg, fed=3)
