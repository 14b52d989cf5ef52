"""decode(encode(x)) == x for text and for arbitrary bytes, and the invalid-UTF-8 policy."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizer_corpus import INVALID_SEQUENCES, corpus_documents, invalid_utf8_documents
from tokenizer_fixtures import engine_tokenizer, hf_ids


def test_corpus_roundtrips():
    tok = engine_tokenizer()
    for kind, i, doc in corpus_documents():
        assert tok.decode(tok.encode(doc)) == doc.encode("utf-8"), f"{kind}[{i}]"
        assert tok.decode_str(tok.encode(doc)) == doc, f"{kind}[{i}]"


def test_invalid_utf8_roundtrips():
    tok = engine_tokenizer()
    for i, data in enumerate(invalid_utf8_documents()):
        assert tok.decode(tok.encode(data)) == data, f"invalid document {i}"


def test_each_invalid_byte_is_one_byte_token():
    tok = engine_tokenizer()
    for seq in INVALID_SEQUENCES:
        ids = tok.encode(seq)
        assert [tok.token_to_piece(t) for t in ids] == [bytes([b]) for b in seq], seq


def test_invalid_byte_separates_valid_text():
    # The documented policy: valid stretches around an invalid byte are encoded
    # as if they were separate strings (and those match HF).
    tok = engine_tokenizer()
    left, right = "Hello world  ", "  123abc 日本語"
    for bad in (b"\xff", b"\xe2\x82", b"\xed\xa0\x80"):
        ids = tok.encode(left.encode() + bad + right.encode())
        expected = hf_ids(left) + [tok.piece_to_id(bytes([b])) for b in bad] + hf_ids(right)
        assert ids == expected, bad


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_roundtrip(data):
    tok = engine_tokenizer()
    assert tok.decode(tok.encode(data)) == data


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_any_text_roundtrips_and_matches_hf(text):
    tok = engine_tokenizer()
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates are not text HF or UTF-8 can carry
    ids = tok.encode(text)
    assert tok.decode(ids) == text.encode("utf-8")
    assert ids == hf_ids(text)
