"""What a GGUF file holds, read through the engine's own GGUF reader.

`ModelFile` answers the questions `ds4kit model info` and every report manifest ask:
architecture, hyperparameters, tensor-type mix, bytes, and how many weight bytes one decoded
token reads (the memory-bandwidth floor of decode).
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ds4kit.engine.native import engine_module

# Routed-expert tensors: a decoded token reads only expert_used_count of expert_count slices.
_EXPERT_TENSOR = re.compile(r"\.ffn_(gate|up|down|gate_up)_exps\.")
_EMBEDDING = {"token_embd.weight"}


def is_routed_expert(tensor_name: str) -> bool:
    """A routed-expert tensor: one token uses only expert_used_count of its expert_count slices."""
    return _EXPERT_TENSOR.search(tensor_name) is not None


@dataclass
class TensorSummary:
    name: str
    type_name: str
    type_id: int
    shape: tuple[int, ...]
    n_elements: int
    nbytes: int


class ModelFile:
    """A GGUF model opened (memory-mapped) by the engine's reader.

    `gguf`: an already open `_engine.GGUFFile` of the same path (a loaded Model's own mapping),
    so that a model is mapped once."""

    def __init__(self, path: str | os.PathLike, gguf: Any = None):
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: model file not found")
        self.gguf = gguf if gguf is not None else engine_module().GGUFFile(str(self.path))

    # Converted to Python on first use: the vocabulary and merges alone are tens of MB of Python
    # objects, which a process that only runs the engine (a bench worker) never needs.
    @functools.cached_property
    def metadata(self) -> dict[str, Any]:
        return dict(self.gguf.metadata)

    @functools.cached_property
    def tensors(self) -> list[TensorSummary]:
        return [
            TensorSummary(t.name, t.type_name, int(t.type_id), tuple(int(d) for d in t.shape),
                          int(t.n_elements), int(t.nbytes))
            for t in self.gguf.tensors
        ]

    # -- identity ---------------------------------------------------------
    @property
    def architecture(self) -> str | None:
        arch = self.metadata.get("general.architecture")
        return str(arch) if arch is not None else None

    @property
    def name(self) -> str | None:
        name = self.metadata.get("general.name")
        return str(name) if name is not None else None

    @property
    def size_bytes(self) -> int:
        return self.path.stat().st_size

    def arch_key(self, suffix: str, default: Any = None) -> Any:
        return self.metadata.get(f"{self.architecture}.{suffix}", default)

    # -- hyperparameters ----------------------------------------------------
    def hparams(self) -> dict[str, Any]:
        """Every `<arch>.*` key with the prefix stripped; long arrays kept whole (they are per layer)."""
        arch = self.architecture
        if not arch:
            return {}
        prefix = arch + "."
        out = {}
        for k, v in self.metadata.items():
            if k.startswith(prefix):
                out[k[len(prefix):]] = v.tolist() if hasattr(v, "tolist") else v
        return out

    def tokenizer_summary(self) -> dict[str, Any]:
        md = self.metadata
        tokens = md.get("tokenizer.ggml.tokens")
        return {
            "model": md.get("tokenizer.ggml.model"),
            "pre": md.get("tokenizer.ggml.pre"),
            "vocab_size": len(tokens) if tokens is not None else None,
            "n_merges": len(md["tokenizer.ggml.merges"]) if "tokenizer.ggml.merges" in md else None,
            "bos_token_id": md.get("tokenizer.ggml.bos_token_id"),
            "eos_token_id": md.get("tokenizer.ggml.eos_token_id"),
        }

    # -- weights ------------------------------------------------------------
    def quant_mix(self) -> dict[str, dict[str, int]]:
        mix: dict[str, dict[str, int]] = {}
        for t in self.tensors:
            m = mix.setdefault(t.type_name, {"tensors": 0, "elements": 0, "bytes": 0})
            m["tensors"] += 1
            m["elements"] += t.n_elements
            m["bytes"] += t.nbytes
        return dict(sorted(mix.items(), key=lambda kv: -kv[1]["bytes"]))

    def tensor_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    def bytes_per_decoded_token(self) -> dict[str, Any]:
        """Weight bytes one decode step must read: the decode memory-bandwidth floor.

        Dense tensors are read whole; routed-expert tensors only for the experts used
        (expert_used_count / expert_count of their bytes); the embedding only one row.
        KV-cache reads grow with context and are not counted here.
        """
        n_expert = self.arch_key("expert_count")
        n_used = self.arch_key("expert_used_count")
        dense = experts = embed = 0
        for t in self.tensors:
            if t.name in _EMBEDDING:
                rows = t.shape[-1] if t.shape else 1
                embed += t.nbytes // max(rows, 1)
            elif is_routed_expert(t.name) and n_expert and n_used:
                experts += t.nbytes * int(n_used) // int(n_expert)
            else:
                dense += t.nbytes
        return {
            "total": dense + experts + embed,
            "dense": dense,
            "routed_experts": experts,
            "embedding_row": embed,
            "expert_fraction": f"{n_used}/{n_expert}" if n_expert else None,
        }

    def manifest_entry(self, sha256: str | None = None) -> dict[str, Any]:
        return {
            "path": str(self.path.resolve()),
            "size_bytes": self.size_bytes,
            "sha256": sha256,
            "architecture": self.architecture,
            "name": self.name,
            "quant_mix": {k: v["tensors"] for k, v in self.quant_mix().items()},
        }


def open_model_file(path: str | os.PathLike) -> ModelFile:
    return ModelFile(path)
