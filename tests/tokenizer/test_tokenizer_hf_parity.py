"""Token ids identical to HF tokenizers on a varied >= 1 MB corpus, document by document."""
from __future__ import annotations

import pytest
from tokenizer_corpus import CORPUS_BYTES, corpus_by_kind, corpus_documents
from tokenizer_fixtures import describe_mismatch, engine_tokenizer, hf_ids, hf_tokenizer, vocab


def test_corpus_is_large_and_varied():
    docs = corpus_by_kind()
    total = sum(len(d.encode("utf-8")) for kind in docs.values() for d in kind)
    assert total >= max(CORPUS_BYTES, 1_000_000)
    text = "".join(d for kind in docs.values() for d in kind)
    # Each feature the issue lists is really present.
    for needle, what in [
        ("def ", "code"), ("\r\n", "CRLF"), ("\t", "tabs"), ("\n\n\n", "newline runs"), ("    ", "space runs"),
        (".\n", "punctuation before newline"), ("東京", "CJK"), ("カタカナ", "katakana"), ("ひらがな", "hiragana"),
        ("\u200d", "ZWJ"), ("🇯🇵", "flag"), ("1️⃣", "keycap"), ("👍🏽", "skin tone"), ("1234", "numbers"),
        ("١", "Arabic-Indic digits"), ("Permission", "licence prose"),
    ]:
        assert needle in text, f"corpus lacks {what} ({needle!r})"
    missing = [t for t, k in zip(vocab().tokens, vocab().token_types) if k != 1 and t not in text]
    assert not missing, f"corpus lacks {len(missing)} added tokens, e.g. {missing[:3]}"
    planes = {ord(c) >> 16 for c in text}
    assert {0, 1, 2, 3, 14, 15, 16} <= planes, f"planes present: {sorted(planes)}"


@pytest.mark.parametrize("kind", list(corpus_by_kind()))
def test_ids_match_hf(kind):
    tok = engine_tokenizer()
    for i, doc in enumerate(corpus_by_kind()[kind]):
        ours, ref = tok.encode(doc), hf_ids(doc)
        assert ours == ref, describe_mismatch(f"{kind}[{i}]", doc, ours, ref)


def test_bytes_input_matches_str_input():
    tok = engine_tokenizer()
    for kind, i, doc in corpus_documents()[::7]:
        assert tok.encode(doc.encode("utf-8")) == tok.encode(doc), f"{kind}[{i}]"


def test_decode_matches_hf_decode():
    tok, hf = engine_tokenizer(), hf_tokenizer()
    for kind, i, doc in corpus_documents()[::5]:
        ids = hf_ids(doc)
        assert tok.decode_str(ids) == hf.decode(ids, skip_special_tokens=False), f"{kind}[{i}]"


def test_short_edge_cases_match_hf():
    cases = [
        "", " ", "  ", "\n", "\r\n", " \n ", "a  ", "a  b", "a \n b", "\t\tx", "x\t\t", "hello\u3000world",
        "don't", "DON'T", "'s", "it's'", "a.b", ".Hello", "..Hello", "(x)", " !!\n\n", "!\r\n\r\nx", "x\u00a0\u00a0y",
        "1234567", "12a34", "a1b", "²³¹", "½x", "١٢٣٤", "Ⅻ Ⅻ", "e\u0301", "\u0301a", "\u0301\u0301", "1\u0301",
        " \u0301", "\n\u0301", "日本語", "日本123語", "ﾃｽﾄ", "・", "ーー", "龥龦", "\u3040", "\u30ff", "한국어",
        "\x00\x01", "\x1c\x1d\x1e\x1f", "\x85", "a\u2028b", "\ufeffx", "😀😀", " 😀", "\U000e0041", "\U0010ffff",
    ]
    tok = engine_tokenizer()
    for text in cases:
        ours, ref = tok.encode(text), hf_ids(text)
        assert ours == ref, describe_mismatch(repr(text), text, ours, ref)


def test_long_pieces_match_hf():
    # Pieces far beyond the word cache's key limit exercise the uncached merge path.
    import random

    rng = random.Random(3)
    letters = "".join(rng.choice("etaoinshrdlu") for _ in range(3000))
    cases = ["a" * 5000, " " * 5000 + "x", "\n" * 3000, "\t \n" * 1000, "日本" * 1500, "ab" * 2500, letters,
             "é" * 2000, "😀" * 800, "!" * 3000, "1" * 3001, "\u3000" * 2000 + "y"]
    tok = engine_tokenizer()
    for text in cases:
        ours, ref = tok.encode(text), hf_ids(text)
        assert ours == ref, describe_mismatch(repr(text[:20]), text, ours, ref)
        assert tok.decode(ours) == text.encode("utf-8")
