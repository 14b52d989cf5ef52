"""Importing llama-cpp-python and opening a GGUF with it: one place for `bench engine`'s
llama.cpp runner and the llama.cpp target.

    lc = import_llama_cpp()          # LlamaCppUnavailable with the pip line when it is missing
    llm = open_llama(path, threads=4, n_ctx=4096, n_batch=512)

llama-cpp-python is an optional dependency (`pip install ds4kit[llama]`, pinned to 0.3.36, the
version whose llama.cpp has `deepseek4`).
"""
from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext
from typing import Any, Iterator

# Makes `import llama_cpp` fail on purpose, to exercise the "no llama.cpp" paths in tests.
HIDE_LLAMA_ENV = "DS4KIT_BENCH_HIDE_LLAMA_CPP"
PIP_LINE = "pip install llama-cpp-python==0.3.36 (or pip install ds4kit[llama])"


class LlamaCppUnavailable(RuntimeError):
    """llama-cpp-python cannot be imported (or was hidden on purpose)."""


def import_llama_cpp():
    if os.environ.get(HIDE_LLAMA_ENV) == "1":
        raise LlamaCppUnavailable(f"llama_cpp hidden on purpose ({HIDE_LLAMA_ENV}=1)")
    try:
        import llama_cpp
    except ImportError as exc:
        raise LlamaCppUnavailable(f"llama_cpp is not importable: {exc} ({PIP_LINE})") from exc
    return llama_cpp


def open_llama(path: str | os.PathLike, *, threads: int, n_ctx: int, n_batch: int, n_gpu_layers: int = 0) -> Any:
    """A `llama_cpp.Llama` on `path`. The same thread count for one-token decode and batched
    forwards (our engine uses one pool for both); n_ubatch = n_batch so a batch of up to n_batch
    tokens is one graph; logits_all=False because callers mark the rows they want themselves.
    With layers on a GPU, flash attention is llama.cpp's own default (auto), as llama-bench runs
    it: llama-cpp-python's Llama() can only say enabled or disabled, and says disabled unless
    told, which on the H200 left its decode after 32K tokens at 30 tok/s against llama-bench's
    297 on the same file (2026-12-03, reports/examples/gpu-speed-h200/16-*)."""
    lc = import_llama_cpp()
    with _flash_attention_auto(lc) if n_gpu_layers > 0 else nullcontext():
        return lc.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                        n_batch=n_batch, n_ubatch=n_batch, n_gpu_layers=n_gpu_layers, logits_all=False,
                        verbose=False)


@contextmanager
def _flash_attention_auto(lc: Any) -> Iterator[None]:
    """For a Llama() built inside: flash_attn=False (the default) means llama.cpp's AUTO.
    Llama.__init__ maps False to llama_cpp.llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED by name, so
    that name holds AUTO while the constructor runs (0.3.36 has no other way to ask for it)."""
    mod = lc.llama_cpp
    saved = mod.LLAMA_FLASH_ATTN_TYPE_DISABLED
    mod.LLAMA_FLASH_ATTN_TYPE_DISABLED = mod.LLAMA_FLASH_ATTN_TYPE_AUTO
    try:
        yield
    finally:
        mod.LLAMA_FLASH_ATTN_TYPE_DISABLED = saved


def flash_attention_type(llm: Any) -> str:
    """What a Llama's context was asked for: auto, enabled or disabled."""
    return {-1: "auto", 0: "disabled", 1: "enabled"}.get(int(llm.context_params.flash_attn_type), "unknown")
