"""The two engines `ds4kit bench engine` compares, behind one small interface.

Each backend loads a GGUF with a given thread count and offers:
    prefill(tokens)        a fresh sequence, all tokens fed, logits of the last one computed
    start(token)           a fresh sequence with one token fed (the untimed start of a tg test)
    decode(token)          one more token fed, its logits computed
Both engines compute only the last row's logits in prefill (llama.cpp with logits_all=False
marks only the last batch row for output; our Session.prefill returns only the last row).
"""
from __future__ import annotations

import os
from typing import Any

# Honoured by the worker: makes `import llama_cpp` fail, to exercise the "no reference" path.
HIDE_LLAMA_ENV = "DS4KIT_BENCH_HIDE_LLAMA_CPP"

ENGINES = ("ds4kit", "llama.cpp")


class LlamaCppUnavailable(RuntimeError):
    """llama-cpp-python cannot be imported (or was hidden on purpose)."""


class Ds4kitBackend:
    name = "ds4kit"

    def __init__(self, path: str, threads: int, n_ctx: int, prefill_mode: str):
        from ds4kit.engine import Model

        self._model = Model.load(path, threads=threads)
        self._n_ctx = n_ctx
        self._mode = prefill_mode
        self._session = None

    def new_sequence(self) -> None:
        # A fresh session per test, like llama-bench clearing the KV cache; allocation is not timed.
        self._session = self._model.session(max_ctx=self._n_ctx)

    def prefill(self, tokens: list[int]) -> None:
        self._session.prefill(tokens, mode=self._mode)

    def decode(self, token: int) -> None:
        self._session.decode(token)

    def info(self) -> dict[str, Any]:
        from ds4kit import _engine

        return {
            "build_info": dict(_engine.build_info),
            "cpu_features": _engine.cpu_features(),
            "threads": self._model.threads,
            "backend": self._model.backend,
            "prefill_mode": self._mode,
            "computes": ("prefill: logits of the last token only (Session.prefill, mode " + self._mode
                         + "); decode: logits of every token; KV cache fp8, indexer fp4 (session defaults)"),
        }


def import_llama_cpp():
    if os.environ.get(HIDE_LLAMA_ENV) == "1":
        raise LlamaCppUnavailable(f"llama_cpp hidden on purpose ({HIDE_LLAMA_ENV}=1)")
    try:
        import llama_cpp
    except ImportError as exc:
        raise LlamaCppUnavailable(f"llama_cpp is not importable: {exc} (pip install llama-cpp-python==0.3.36)") from exc
    return llama_cpp


class LlamaCppBackend:
    name = "llama.cpp"

    def __init__(self, path: str, threads: int, n_ctx: int, n_batch: int):
        self._lc = import_llama_cpp()
        # Same threads for single-token decode and batched prefill, as our engine uses one pool.
        self._llm = self._lc.Llama(model_path=path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                                   n_batch=n_batch, n_ubatch=n_batch, logits_all=False, verbose=False)
        self._threads = threads
        self._n_batch = n_batch

    def _sync(self) -> None:
        # llama_decode on the CPU returns when done; synchronize makes that explicit for any backend.
        self._lc.llama_synchronize(self._llm._ctx.ctx)

    def new_sequence(self) -> None:
        # reset() rewinds n_tokens; the next eval() removes every KV cell from position 0 on.
        self._llm.reset()

    def prefill(self, tokens: list[int]) -> None:
        self._llm.eval(tokens)
        self._sync()

    def decode(self, token: int) -> None:
        self._llm.eval([token])
        self._sync()

    def info(self) -> dict[str, Any]:
        sysinfo = self._lc.llama_print_system_info()
        return {
            "version": getattr(self._lc, "__version__", None),
            "system_info": sysinfo.decode("utf-8", "replace") if isinstance(sysinfo, bytes) else str(sysinfo),
            "threads": self._threads,
            "n_batch": self._n_batch,
            "computes": ("prefill: Llama.eval in n_batch chunks, logits_all=False so only the last row's "
                         "logits; decode: Llama.eval of one token, its logits; KV cache default type (f16)"),
        }


def make_backend(engine: str, path: str, threads: int, n_ctx: int, prefill_mode: str, n_batch: int):
    if engine == "ds4kit":
        return Ds4kitBackend(path, threads, n_ctx, prefill_mode)
    if engine == "llama.cpp":
        return LlamaCppBackend(path, threads, n_ctx, n_batch)
    raise ValueError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
