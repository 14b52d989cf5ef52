"""The tokenizer test corpus: deterministic, >= 1 MB, every kind of text the issue names.

The generator itself lives in ds4kit.bench.tokenizer_corpus so that
`ds4kit bench tokenizer` encodes the very same corpus; this module fixes the
test size and seed and adds byte strings that are not valid UTF-8.
"""
from __future__ import annotations

import random
from functools import lru_cache

from ds4kit.bench.tokenizer_corpus import build_corpus_by_kind

CORPUS_BYTES = 1_100_000
SEED = 0


@lru_cache(maxsize=None)
def corpus_by_kind() -> dict[str, list[str]]:
    return build_corpus_by_kind(CORPUS_BYTES, SEED)


def corpus_documents() -> list[tuple[str, int, str]]:
    """(kind, index, text) for every document."""
    return [(kind, i, doc) for kind, docs in corpus_by_kind().items() for i, doc in enumerate(docs)]


# Byte sequences that are not valid UTF-8, each for a different reason.
INVALID_SEQUENCES = [
    b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc0\xaf", b"\xc1\xbf",  # stray continuation, overlong lead
    b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf",  # overlong 3- and 4-byte forms
    b"\xed\xa0\x80", b"\xed\xbf\xbf",  # UTF-16 surrogates
    b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80",  # beyond U+10FFFF
    b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3",  # truncated sequences
    b"\xe2\x28\xa1", b"\xc3\x28",  # lead byte followed by a non-continuation
]


@lru_cache(maxsize=None)
def invalid_utf8_documents(count: int = 300) -> list[bytes]:
    """Valid text from the corpus with invalid sequences spliced in at random places."""
    rng = random.Random(1234)
    docs = [d for _, _, d in corpus_documents()]
    out = [b"".join(INVALID_SEQUENCES), bytes(range(256)), bytes(range(255, -1, -1))]
    for _ in range(count):
        text = rng.choice(docs)[: rng.randint(1, 3000)].encode("utf-8")
        for _ in range(rng.randint(1, 12)):
            at = rng.randint(0, len(text))
            bad = rng.choice(INVALID_SEQUENCES) if rng.random() < 0.7 else bytes(
                rng.randrange(256) for _ in range(rng.randint(1, 8)))
            text = text[:at] + bad + text[at:]
        out.append(text)
    return out
