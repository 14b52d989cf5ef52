"""One loaded model: the engine's native model over one memory mapping of the GGUF, its
metadata, its tokenizer (built in C++ from the file) and the chat template.

    from ds4kit.engine import Model
    model = Model.load("model.gguf", backend="auto", threads=None)
    ids = model.encode(model.render_chat([{"role": "user", "content": "Hi"}]))
    s = model.session(max_ctx=4096, fp8_kv=True, indexer_fp4=True)
    last = s.prefill(ids)                 # float32 [n_vocab]

Every job (generate, bench, probes, evals) reaches the engine through this class, usually
behind a target (ds4kit.targets).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from ds4kit.engine.model_file import ModelFile
from ds4kit.engine.native import engine_module
from ds4kit.engine.session import Session

BACKENDS = ("auto", "cpu", "cuda", "hip")


def usable_cpus() -> int:
    """CPUs this process may run on (the affinity mask where the OS has one): the default thread
    count, so a run under taskset or a container's CPU share does not oversubscribe."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def check_backend_name(backend: str) -> str:
    """The backend name as given, or ValueError naming the choices (before any model loads)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
    return backend


class Model:
    """A deepseek4 GGUF loaded on one backend; sessions share it read-only."""

    def __init__(self, native: Any, path: Path):
        self._m = native
        self.path = path
        self.file = ModelFile(path, gguf=native.gguf)

    @classmethod
    def load(cls, path: str | os.PathLike, backend: str = "auto", threads: int | None = None) -> "Model":
        path = Path(path)
        check_backend_name(backend)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: model file not found")
        native = engine_module().Model(str(path), threads=usable_cpus() if threads is None else int(threads),
                                 backend=backend)
        return cls(native, path)

    # -- what it is ---------------------------------------------------------
    @property
    def hparams(self) -> dict:
        return self._m.hparams

    @property
    def n_vocab(self) -> int:
        return int(self.hparams["n_vocab"])

    @property
    def backend(self) -> str:
        """The backend that runs it, e.g. 'cpu(avx512)' or 'cuda(NVIDIA H200)'."""
        return self._m.backend

    @property
    def backend_kind(self) -> str:
        """'cpu', 'cuda' or 'hip' (what backend='auto' resolved to)."""
        return self._m.backend_kind

    @property
    def threads(self) -> int:
        return self._m.threads

    @property
    def architecture(self) -> str | None:
        return self.file.architecture

    @property
    def name(self) -> str | None:
        return self.file.name

    def info(self) -> dict[str, Any]:
        """Architecture, hyperparameters, quant mix, bytes and decode bytes per token, tokenizer, backend."""
        return {
            "path": str(self.path),
            "architecture": self.file.architecture,
            "name": self.file.name,
            "size_bytes": self.file.size_bytes,
            "hparams": self.hparams,
            "quant_mix": self.file.quant_mix(),
            "tensor_bytes": self.file.tensor_bytes(),
            "bytes_per_decoded_token": self.file.bytes_per_decoded_token(),
            "tokenizer": self.file.tokenizer_summary(),
            "backend": self.backend,
            "threads": self.threads,
        }

    def manifest_entry(self, sha256: str | None = None) -> dict[str, Any]:
        return {**self.file.manifest_entry(sha256), "backend": self.backend}

    # -- text ---------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        """The C++ tokenizer built from the file (FormatError if the file has no tokenizer metadata)."""
        return self._m.tokenizer

    def encode(self, text: str, parse_special: bool = True) -> list[int]:
        return [int(t) for t in self.tokenizer.encode(text, parse_special)]

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(self.tokenizer.decode([int(i) for i in ids])).decode("utf-8", errors="replace")

    def token_id(self, piece: str) -> int:
        """Id of a special token looked up by its string (never a hard-coded id); ArgumentError names it."""
        return int(self.tokenizer.special_token_id(piece))

    def render_chat(self, messages: list[dict[str, Any]], thinking: bool = False,
                    effort: str | None = None) -> str:
        from ds4kit.chat import render_chat

        return render_chat(messages, thinking=thinking, reasoning_effort=effort)

    # -- running ------------------------------------------------------------
    def session(self, max_ctx: int, fp8_kv: bool = True, indexer_fp4: bool = True,
                capture_layers: Sequence[int] = (), capture_at: str = "output") -> Session:
        """A fresh sequence. fp8_kv / indexer_fp4: D's roundings (True) or llama.cpp's (False).
        capture_layers / capture_at ('input' or 'output'): record those layers' HC-stream mean per
        token (Session.captured)."""
        return Session(self._m.session(int(max_ctx), fp8_kv=bool(fp8_kv), indexer_fp4=bool(indexer_fp4),
                                       capture_layers=[int(i) for i in capture_layers], capture_at=capture_at),
                       model=self)


def available_backends() -> dict[str, str]:
    """Each backend name and whether this build and machine can run it ('ok' or the reason)."""
    return dict(engine_module().available_backends())
