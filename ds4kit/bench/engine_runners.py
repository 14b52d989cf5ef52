"""The two engines `ds4kit bench engine` compares, each behind one small "engine runner"
(not to be confused with the engine's compute backends, cpu/cuda/hip).

Each runner loads a GGUF with a given thread count and offers:
    new_sequence(speculative=False)     a fresh, empty sequence (speculative: for a DSpark test, ds4kit only)
    at_depth(d, tokens, speculative)    a sequence holding the d context tokens (untimed set-up at depth d)
    prefill(tokens)        all tokens fed, logits of the last one computed
    decode(token)          one more token fed, its logits computed
Both engines compute only the last row's logits in prefill (llama.cpp with logits_all=False
marks only the last batch row for output; our Session.prefill returns only the last row).
"""
from __future__ import annotations

from typing import Any

# One place for importing and opening llama.cpp (the llama.cpp target uses it too). The worker
# honours HIDE_LLAMA_ENV: `import llama_cpp` fails, to exercise the "no reference" path.
from ds4kit.targets.llama_cpp_loader import (HIDE_LLAMA_ENV, LlamaCppUnavailable, flash_attention_type,
                                             import_llama_cpp, open_llama)

__all__ = ["ENGINES", "HIDE_LLAMA_ENV", "Ds4kitRunner", "LlamaCppRunner", "LlamaCppUnavailable", "import_llama_cpp",
           "make_runner"]

ENGINES = ("ds4kit", "llama.cpp")


class Ds4kitRunner:
    """The embedded engine, built by the same target helper as every other command
    (ds4kit.targets), with the backend and numerics the bench was given."""

    name = "ds4kit"

    def __init__(self, target_spec: dict[str, Any], n_ctx: int, prefill_mode: str):
        from ds4kit.targets import TargetOptions, build_target

        self._target = build_target(TargetOptions.from_spec(target_spec))
        self._target.load()
        self._n_ctx = n_ctx
        self._mode = prefill_mode
        self._session = None
        self._depth_snapshots: dict[tuple[int, bool], Any] = {}  # (depth, speculative)

    def new_sequence(self, speculative: bool = False) -> None:
        # A fresh session per test, like llama-bench clearing the KV cache; allocation is not timed.
        # A speculative one also captures the layers the drafter reads.
        spec = self._target.speculation if speculative else None
        self._session = self._target.model.session(**self._target.session_options(self._n_ctx, speculation=spec))

    def at_depth(self, depth: int, tokens: list[int], speculative: bool = False) -> None:
        # Prefilled once per depth (and session kind), then every measurement restores that
        # snapshot into a fresh session (as ds4-bench does), so a test at 64K does not pay a 64K
        # prefill per repetition.
        self.new_sequence(speculative)
        key = (depth, speculative)
        snap = self._depth_snapshots.get(key)
        if snap is None:
            self._session.prefill(tokens, mode="batched")
            self._depth_snapshots[key] = self._session.snapshot()
        else:
            self._session.restore(snap)

    def generate(self, start_token: int, n: int, speculative: bool) -> dict[str, Any]:
        """n greedy tokens after start_token from the current sequence, with the target's DSpark
        drafter or without; the decode loop's seconds (the start token's feed untimed)."""
        import hashlib

        from ds4kit.engine.generate import GenerationConfig, generate

        spec = self._target.speculation if speculative else None
        # The start token is fed here, so generate() starts from the whole sequence as its prompt.
        first = self._session.prefill([start_token], mode="exact")
        prompt = list(self._session.tokens)
        res = generate(self._session, self._target.model.tokenizer, prompt, GenerationConfig(max_tokens=n),
                       fed=len(prompt), first_logits=first, speculation=spec)
        out = {"seconds": res.decode_s, "n_tokens": len(res.tokens),
               "tokens_sha256": hashlib.sha256(",".join(map(str, res.tokens)).encode()).hexdigest()}
        if spec is not None and getattr(res, "speculation", None):
            sp = res.speculation
            out["speculation"] = {k: sp.get(k) for k in ("acceptance_rate", "tokens_per_forward", "mean_accept_length")}
        return out

    def prefill(self, tokens: list[int]) -> None:
        self._session.prefill(tokens, mode=self._mode)

    def decode(self, token: int) -> None:
        self._session.decode(token)

    def info(self) -> dict[str, Any]:
        from ds4kit import _engine

        target = self._target.describe()
        n = target["numerics"]
        return {
            "build_info": dict(_engine.build_info),
            "cpu_features": _engine.cpu_features(),
            "threads": target["threads"],
            "backend": target["backend_resolved"],
            "prefill_mode": self._mode,
            "numerics": n,
            "computes": ("prefill: logits of the last token only (Session.prefill, mode " + self._mode
                         + "); decode: logits of every token; a test at depth d restores a snapshot taken after "
                         "prefilling the d context tokens once; KV rows "
                         + ("through an FP8-E4M3 round trip" if n["fp8_kv"] else "kept without FP8 rounding")
                         + ", indexer " + ("with" if n["indexer_fp4"] else "without") + " FP4 rounding"),
        }


class LlamaCppRunner:
    name = "llama.cpp"

    def __init__(self, path: str, threads: int, n_ctx: int, n_batch: int, n_gpu_layers: int = 0):
        self._lc = import_llama_cpp()
        self._llm = open_llama(path, threads=threads, n_ctx=n_ctx, n_batch=n_batch, n_gpu_layers=n_gpu_layers)
        self._threads = threads
        self._n_batch = n_batch
        self._n_gpu_layers = n_gpu_layers

    def _sync(self) -> None:
        # llama_decode on the CPU returns when done; synchronize makes that explicit for any backend.
        self._lc.llama_synchronize(self._llm._ctx.ctx)

    def new_sequence(self, speculative: bool = False) -> None:
        # reset() rewinds n_tokens; the next eval() removes every KV cell from position 0 on.
        if speculative:
            raise ValueError("llama.cpp runs no DSpark tests (they are ds4kit's own on/off comparison)")
        self._llm.reset()

    def at_depth(self, depth: int, tokens: list[int], speculative: bool = False) -> None:
        # llama-bench's -d: the context is prefilled before each measurement, untimed.
        self.new_sequence(speculative)
        self.prefill(tokens)

    def prefill(self, tokens: list[int]) -> None:
        self._llm.eval(tokens)
        self._sync()

    def decode(self, token: int) -> None:
        self._llm.eval([token])
        self._sync()

    def info(self) -> dict[str, Any]:
        sysinfo = self._lc.llama_print_system_info()
        fa = flash_attention_type(self._llm)
        return {
            "version": getattr(self._lc, "__version__", None),
            "system_info": sysinfo.decode("utf-8", "replace") if isinstance(sysinfo, bytes) else str(sysinfo),
            "threads": self._threads,
            "n_batch": self._n_batch,
            "n_gpu_layers": self._n_gpu_layers,
            "flash_attention": fa,
            "computes": ("prefill: Llama.eval in n_batch chunks, logits_all=False so only the last row's "
                         "logits; decode: Llama.eval of one token, its logits; a test at depth d first prefills "
                         f"the d context tokens, untimed; {self._n_gpu_layers} layers on a GPU, flash attention "
                         f"{fa}; KV cache default type (f16), "
                         "no FP8 round trip of KV rows and no FP4 rounding in the indexer"),
            "numerics": {"fp8_kv": False, "indexer_fp4": False},
        }


def make_runner(engine: str, spec: dict[str, Any]):
    """The runner for `engine` from the bench's worker spec (model, threads, n_ctx, ...)."""
    if engine == "ds4kit":
        return Ds4kitRunner(spec["target"], spec["n_ctx"], spec["prefill_mode"])
    if engine == "llama.cpp":
        return LlamaCppRunner(spec["model"], spec["threads"], spec["n_ctx"], spec["n_batch"],
                              spec.get("llama_gpu_layers", 0))
    raise ValueError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
