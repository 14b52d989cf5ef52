"""A model ready to run: the engine's native model, its GGUF metadata and its tokenizer,
opened once and shared by `generate` and the probes."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ds4kit.engine.model_file import ModelFile
from ds4kit.engine.session import Model
from ds4kit.engine.tokenizer import tokenizer_from_metadata


@dataclass
class Runtime:
    path: Path
    file: ModelFile
    model: Model
    tokenizer: Any

    def token_id(self, piece: str) -> int:
        """Id of a special token looked up by its string (never by a hard-coded id); the engine's
        tokenizer raises ArgumentError naming the text when the vocabulary lacks it."""
        return int(self.tokenizer.special_token_id(piece))

    def encode(self, text: str, parse_special: bool = True) -> list[int]:
        return [int(t) for t in self.tokenizer.encode(text, parse_special)]

    def decode(self, ids) -> str:
        return bytes(self.tokenizer.decode([int(i) for i in ids])).decode("utf-8", errors="replace")


def load_runtime(path: str | os.PathLike, threads: int | None = None) -> Runtime:
    mf = ModelFile(path)
    if mf.architecture != "deepseek4":
        raise ValueError(f"{path}: general.architecture is {mf.architecture!r}; the engine runs 'deepseek4'")
    tok = tokenizer_from_metadata(mf.metadata, str(path))
    return Runtime(Path(path), mf, Model.load(path, threads=threads), tok)
