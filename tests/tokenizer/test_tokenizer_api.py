"""Vocabulary accessors against HF, and concurrent use."""
from __future__ import annotations

import threading

import pytest
from tokenizer_corpus import corpus_documents
from tokenizer_fixtures import engine_tokenizer, hf_tokenizer, vocab

from ds4kit import _engine


def _byte_decoder() -> dict[str, int]:
    # GPT-2's byte-level alphabet, rebuilt independently of the engine.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def test_sizes_and_ids():
    tok, hf = engine_tokenizer(), hf_tokenizer()
    assert tok.vocab_size == len(tok) == 129280 == hf.get_vocab_size(with_added_tokens=True)
    assert tok.pre == "joyai-llm"
    assert (tok.bos_id, tok.eos_id) == (vocab().bos_id, vocab().eos_id)


def test_every_token_piece_and_text():
    tok, hf = engine_tokenizer(), hf_tokenizer()
    dec = _byte_decoder()
    for i in range(tok.vocab_size):
        text = hf.id_to_token(i)
        assert tok.token_text(i) == text
        if tok.token_type(i) == 1:
            expected = bytes(dec[c] for c in text)
        else:
            expected = text.encode("utf-8")
        assert tok.token_to_piece(i) == expected, i
        assert tok.piece_to_id(expected) == i, i


def test_piece_to_id_accepts_str_and_reports_absence():
    tok = engine_tokenizer()
    assert tok.piece_to_id(" the") == tok.piece_to_id(b" the") == hf_tokenizer().token_to_id("Ġthe")
    assert tok.piece_to_id(b"\x00definitely not a token\x00") is None


def test_concurrent_encodes_agree():
    tok = engine_tokenizer()
    docs = [d for _, _, d in corpus_documents()[:120]]
    expected = [tok.encode(d) for d in docs]
    errors = []

    def work(offset):
        for k in range(len(docs)):
            j = (k + offset) % len(docs)
            if tok.encode(docs[j]) != expected[j]:
                errors.append(j)

    threads = [threading.Thread(target=work, args=(o * 31,)) for o in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_text_argument_types():
    tok = engine_tokenizer()
    assert tok.encode(bytearray(b"abc")) == tok.encode("abc")
    with pytest.raises(TypeError, match="text must be str or bytes"):
        tok.encode(123)
    with pytest.raises(UnicodeEncodeError):
        tok.encode("\ud800")  # a lone surrogate has no UTF-8 form; pass bytes instead
    assert isinstance(_engine.Tokenizer, type)
