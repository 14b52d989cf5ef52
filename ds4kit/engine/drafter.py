"""The DSpark drafter from Python: a thin facade over ds4kit._engine.Drafter (numpy in, numpy out)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ds4kit.engine.native import engine_module


class Drafter:
    """A `deepseek4-dflash-draft` GGUF bound to its target Model (the target's embedding, LM head
    and backend). `propose` runs one drafter forward; the speculative loop is not here."""

    def __init__(self, native: Any, path: Path):
        self._d = native
        self.path = path

    @classmethod
    def load(cls, path: str | os.PathLike, model: Any) -> "Drafter":
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: drafter file not found")
        native_model = getattr(model, "_m", model)  # a ds4kit.engine.Model or an _engine.Model
        return cls(engine_module().Drafter.load(str(path), native_model), path)

    @property
    def block_size(self) -> int:
        return self._d.block_size

    @property
    def capture_layers(self) -> list[int]:
        """The target layers whose features it reads: Session(capture_layers=...)."""
        return list(self._d.capture_layers)

    @property
    def max_context(self) -> int:
        return self._d.max_context

    def propose(self, features: np.ndarray, seed: int, pos: int, candidates: int = 0) -> dict:
        """features: float32 [n_ctx, layers, n_embd] of positions pos - n_ctx .. pos - 1 (Session.captured()
        rows; the last max_context are used); seed: the token at pos. Returns {'tokens': m
        candidates for pos + 1 .., 'logits': float32 [m, n_vocab], 'confidence': float32 [m] or None}
        with m = candidates (the Markov chain stops there) or block_size when candidates <= 0."""
        return self._d.propose(np.ascontiguousarray(features, dtype=np.float32), int(seed), int(pos),
                               int(candidates))
