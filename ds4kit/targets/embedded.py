"""The embedded engine as a target: `ds4kit.engine.Model` with the numerics the user chose."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from ds4kit.engine.generate import GenerationConfig, GenerationResult, TokenEvent, generate
from ds4kit.targets.capabilities import Capabilities, ModelIdentity
from ds4kit.targets.options import TargetOptions

EMBEDDED_CAPABILITIES = Capabilities(logits=True, verify=True, snapshot=True, rewind=True, drafter=True,
                                     token_ids=True, top_logprobs=True, server_timings=False)


class EmbeddedTarget:
    kind = "embedded"
    capabilities = EMBEDDED_CAPABILITIES

    def __init__(self, path: Path, options: TargetOptions, synthetic_model: str | None = None):
        self.path = Path(path)
        self.options = options
        self.synthetic_model = synthetic_model
        self._model = None
        self._speculation = None

    # -- lifecycle ----------------------------------------------------------
    def load(self) -> None:
        if self._model is None:
            from ds4kit.engine import Model

            self._model = Model.load(self.path, backend=self.options.backend, threads=self.options.resolved_threads)
        if self.options.drafter is not None and self._speculation is None:
            from ds4kit.engine import Drafter
            from ds4kit.engine.speculative import Speculation

            self._speculation = Speculation.dspark(Drafter.load(self.options.drafter, self._model),
                                                   width=self.options.spec_width)

    @property
    def speculation(self):
        """The DSpark drafter and width policy replies are generated with (None: target-only)."""
        return self._speculation

    def release(self) -> None:
        """Drop the loaded model (its memory and threads); load() loads it again."""
        self._model = None

    @property
    def model(self):
        """The loaded ds4kit.engine.Model (load() first)."""
        if self._model is None:
            raise RuntimeError("the target is not loaded yet: call load() first")
        return self._model

    # -- what it is -----------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        loaded = self._model is not None
        return {
            "kind": self.kind,
            "backend": self.options.backend,
            "backend_resolved": self._model.backend if loaded else None,
            "threads": self._model.threads if loaded else self.options.threads,
            "numerics": self.options.numerics.as_dict(),
            "capabilities": self.capabilities.as_dict(),
            "synthetic_model": self.synthetic_model,
            "speculation": self._speculation.describe() if self._speculation is not None else (
                {"drafter": str(self.options.drafter), "width": self.options.spec_width or "auto"}
                if self.options.drafter is not None else None),
        }

    def manifest_entry(self) -> dict[str, Any]:
        return self.model.manifest_entry()

    def identity(self) -> ModelIdentity:
        return ModelIdentity(self.path, self.model.name, self.model.architecture)

    # -- text ---------------------------------------------------------------
    def tokenize(self, text: str, parse_special: bool = True) -> list[int]:
        return self.model.encode(text, parse_special=parse_special)

    def detokenize(self, ids: Sequence[int]) -> str:
        return self.model.decode(ids)

    def render_chat(self, messages: list[dict[str, Any]], thinking: bool = False, effort: str | None = None) -> str:
        return self.model.render_chat(messages, thinking=thinking, effort=effort)

    def token_id(self, piece: str) -> int:
        return self.model.token_id(piece)

    # -- running ------------------------------------------------------------
    def session(self, max_ctx: int):
        """A fresh engine session with this target's numerics (capabilities logits, verify, snapshot)."""
        return self.model.session(**self.session_options(max_ctx))

    def session_options(self, max_ctx: int, speculation: Any = "own") -> dict[str, Any]:
        """A session's options: this target's numerics, and the features `speculation` reads
        ("own": this target's drafter, if any; None: none)."""
        n = self.options.numerics
        out = {"max_ctx": max_ctx, "fp8_kv": n.fp8_kv, "indexer_fp4": n.indexer_fp4}
        spec = self._speculation if speculation == "own" else speculation
        if spec is not None:
            out.update(spec.session_options())
        return out

    def prefix_cache(self, max_ctx: int, *, max_bytes: int, cache_dir: Path | None = None,
                     disk_max_bytes: int | None = None, warn: Callable[[str], None] | None = None):
        """A prefix cache of this model for sessions with this target's options (capability snapshot)."""
        from ds4kit.engine.prefix_cache import PrefixCache

        return PrefixCache(self.model, self.session_options(max_ctx), max_bytes=max_bytes, cache_dir=cache_dir,
                           disk_max_bytes=disk_max_bytes, warn=warn)

    def converse(self, messages: Sequence[dict[str, Any]], config: GenerationConfig, *, max_ctx: int,
                 thinking: bool, effort: str | None, cache: Any = None,
                 on_token: Callable[[int, TokenEvent], None] | None = None,
                 should_stop: Callable[[], bool] | None = None):
        """Every missing assistant reply of `messages`, in order (ds4kit.engine.conversation)."""
        from ds4kit.engine.conversation import run_conversation

        return run_conversation(self.model, messages, config, session_options=self.session_options(max_ctx),
                                cache=cache, thinking=thinking, effort=effort, on_token=on_token,
                                should_stop=should_stop, speculation=self._speculation)

    def generate(self, prompt_ids: Sequence[int], config: GenerationConfig, *, max_ctx: int,
                 on_token: Callable[[TokenEvent], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> GenerationResult:
        return generate(self.session(max_ctx), self.model.tokenizer, prompt_ids, config, on_token=on_token,
                        should_stop=should_stop, speculation=self._speculation)
