"""Build the engine's C++ tokenizer from a GGUF's `tokenizer.ggml.*` metadata."""
from __future__ import annotations

from typing import Any


def _require(md: dict[str, Any], key: str, path: str) -> Any:
    if key not in md:
        raise ValueError(f"{path}: GGUF metadata lacks {key!r}; cannot build the tokenizer")
    return md[key]


def tokenizer_from_metadata(md: dict[str, Any], path: str = "<model>"):
    from ds4kit import _engine

    tokens = list(_require(md, "tokenizer.ggml.tokens", path))
    merges = list(_require(md, "tokenizer.ggml.merges", path))
    types = [int(t) for t in _require(md, "tokenizer.ggml.token_type", path)]
    pre = str(_require(md, "tokenizer.ggml.pre", path))
    model = md.get("tokenizer.ggml.model")
    if model is not None and model != "gpt2":
        raise ValueError(f"{path}: tokenizer.ggml.model is {model!r}; only byte-level BPE ('gpt2') is supported")
    bos = int(md.get("tokenizer.ggml.bos_token_id", -1))
    eos = int(md.get("tokenizer.ggml.eos_token_id", -1))
    return _engine.Tokenizer(tokens, merges, types, pre, bos, eos)
