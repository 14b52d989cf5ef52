"""Bad vocabularies and bad calls give clear errors naming what is wrong."""
from __future__ import annotations

import pytest
from tokenizer_fixtures import engine_tokenizer

from ds4kit import _engine


def _byte_alphabet() -> list[str]:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    extra = [b for b in range(256) if b not in bs]
    return [chr(b) for b in bs] + [chr(256 + k) for k in range(len(extra))]


def _tiny(**overrides):
    """A minimal valid vocabulary: the 256 byte tokens, two merges and one control token."""
    tokens = _byte_alphabet() + ["ab", "abc", "<|ctl|>"]
    args = dict(tokens=tokens, merges=["a b", "ab c"], token_types=[1] * (len(tokens) - 1) + [3],
                pre="joyai-llm", bos_id=len(tokens) - 1, eos_id=-1)
    args.update(overrides)
    return _engine.Tokenizer(**args)


def test_tiny_vocabulary_works():
    tok = _tiny()
    ids = tok.encode("abc<|ctl|>ab")
    assert [tok.token_text(i) for i in ids] == ["abc", "<|ctl|>", "ab"]
    assert tok.eos_id is None and tok.bos_id == tok.special_token_id("<|ctl|>")


def test_unsupported_pre_names_key_and_value():
    with pytest.raises(_engine.UnsupportedError, match=r"tokenizer\.ggml\.pre = 'qwen2' is not supported"):
        _tiny(pre="qwen2")


@pytest.mark.parametrize("line, why", [
    ("ab", "expected two tokens separated by one space"),
    ("a  b", "expected two tokens separated by one space"),
    ("a b c", "expected two tokens separated by one space"),
    (" a", "expected two tokens separated by one space"),
    ("zz b", "left token 'zz' is not in tokenizer.ggml.tokens"),
    ("a zz", "right token 'zz' is not in tokenizer.ggml.tokens"),
    ("b a", "merged token 'ba' is not in tokenizer.ggml.tokens"),
])
def test_bad_merges_line(line, why):
    with pytest.raises(_engine.FormatError, match=r"tokenizer\.ggml\.merges\[1\] = '" ):
        _tiny(merges=["a b", line])
    with pytest.raises(_engine.FormatError) as err:
        _tiny(merges=["a b", line])
    assert why in str(err.value)


def test_token_type_errors():
    n = len(_byte_alphabet()) + 3
    with pytest.raises(_engine.FormatError, match=r"tokenizer\.ggml\.token_type has 3 entries but tokenizer\.ggml\.tokens has"):
        _tiny(token_types=[1, 1, 1])
    with pytest.raises(_engine.FormatError, match=r"tokenizer\.ggml\.token_type\[5\] = 9 is not a token type"):
        _tiny(token_types=[1] * 5 + [9] + [1] * (n - 6))
    with pytest.raises(_engine.UnsupportedError, match=r"token_type\[5\] = 6"):
        _tiny(token_types=[1] * 5 + [6] + [1] * (n - 6))


def test_missing_byte_token_and_bad_ids():
    tokens = _byte_alphabet()[1:] + ["ab", "abc", "<|ctl|>"]
    with pytest.raises(_engine.FormatError, match=r"lacks the byte-level token '!' for byte 0x21"):
        _tiny(tokens=tokens, token_types=[1] * (len(tokens) - 1) + [3])
    with pytest.raises(_engine.FormatError, match=r"tokenizer\.ggml\.eos_token_id = 999 is out of range"):
        _tiny(eos_id=999)
    with pytest.raises(_engine.FormatError, match=r"tokenizer\.ggml\.tokens is empty"):
        _tiny(tokens=[], token_types=[])


def test_decode_out_of_range_names_the_id():
    tok = engine_tokenizer()
    for bad in (tok.vocab_size, -1, 2**40):
        with pytest.raises(_engine.ArgumentError, match=rf"token id {bad} at position 1 is out of range \[0, 129280\)"):
            tok.decode([5, bad])
    with pytest.raises(_engine.ArgumentError, match=r"position 0 is not an int"):
        tok.decode(["x"])
    with pytest.raises(_engine.ArgumentError, match=r"token id 129280"):
        tok.token_to_piece(129280)
    with pytest.raises(_engine.ArgumentError, match=r"no control or user-defined token with text '<nope>'"):
        tok.special_token_id("<nope>")
    assert issubclass(_engine.ArgumentError, _engine.Ds4Error)
