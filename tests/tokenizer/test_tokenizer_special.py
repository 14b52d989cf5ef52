"""Added (control / user-defined) tokens: found by string, matched like HF."""
from __future__ import annotations

import random

from tokenizer_fixtures import describe_mismatch, engine_tokenizer, hf_ids, hf_tokenizer, vocab

CONTROL, USER_DEFINED = 3, 4


def _added():
    v = vocab()
    return [(t, i, k) for i, (t, k) in enumerate(zip(v.tokens, v.token_types)) if k in (CONTROL, USER_DEFINED)]


def test_every_added_token_alone_and_by_name():
    tok, hf = engine_tokenizer(), hf_tokenizer()
    for text, i, kind in _added():
        assert tok.encode(text) == [i] == hf_ids(text), text
        assert tok.special_token_id(text) == i == hf.token_to_id(text)
        assert tok.token_type(i) == kind
        assert tok.decode([i]) == text.encode("utf-8")
    assert len(tok.special_tokens()) == len(_added()) == 1283


def test_chat_markers_are_looked_up_by_string():
    tok, hf = engine_tokenizer(), hf_tokenizer()
    for text in ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>"]:
        assert tok.special_token_id(text) == hf.token_to_id(text)
    assert tok.bos_id == hf.token_to_id("<｜begin▁of▁sentence｜>")
    assert tok.eos_id == hf.token_to_id("<｜end▁of▁sentence｜>")
    assert tok.find_special("<｜Nobody｜>") is None


def test_single_pass_is_equivalent_to_hf_two_passes_for_this_vocabulary():
    # special_matcher.h relies on these two facts about the vocabulary.
    texts = [t for t, _, _ in _added()]
    contained = [(a, b) for a in texts for b in texts if a != b and b in a]
    assert contained == []
    prefixes = {}
    for b in texts:
        for k in range(1, len(b)):
            prefixes.setdefault(b[:k], []).append(b)
    overlaps = sorted({(a, b) for a in texts for k in range(1, len(a)) for b in prefixes.get(a[k:], ()) if a != b})
    assert overlaps == [("<｜/table>｜", "｜DSML｜")]


def test_adversarial_added_token_mixes_match_hf():
    tok = engine_tokenizer()
    texts = [t for t, _, _ in _added()]
    rng = random.Random(7)
    glue = ["", " ", "\n", "<", ">", "｜", "<｜", "|", "x", "DSML", "/", "▁"]
    cases = ["<｜/table>｜DSML｜", "｜DSML｜DSML｜", "<<think>>", "<think</think>", "<｜User<｜User｜>", "<｜User｜｜>"]
    for _ in range(400):
        parts = []
        for _ in range(rng.randint(1, 6)):
            t = rng.choice(texts)
            cut = rng.random()
            parts.append(t if cut < 0.5 else (t[: rng.randint(1, len(t))] if cut < 0.75 else t[rng.randint(0, len(t) - 1):]))
            parts.append(rng.choice(glue))
        cases.append("".join(parts))
    for text in cases:
        ours, ref = tok.encode(text), hf_ids(text)
        assert ours == ref, describe_mismatch(repr(text), text, ours, ref)


def test_parse_special_false_matches_hf_encode_special_tokens():
    tok, hf = engine_tokenizer(), hf_tokenizer()
    text = "<｜begin▁of▁sentence｜><｜User｜>hi<think>x</think><｜end▁of▁sentence｜>｜DSML｜<｜▁pad▁｜>"
    hf.encode_special_tokens = True
    try:
        ref = hf.encode(text, add_special_tokens=False).ids
    finally:
        hf.encode_special_tokens = False
    ours = tok.encode(text, parse_special=False)
    assert ours == ref
    bos = tok.special_token_id("<｜begin▁of▁sentence｜>")
    assert bos not in ours  # control token text stays text
    assert tok.special_token_id("<think>") in ours  # user-defined still matched
    assert tok.decode(ours) == text.encode("utf-8")
