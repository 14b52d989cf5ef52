"""The `Target` protocol and what a target can do (`Capabilities`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

# Type-only imports; a target that generates returns the engine facade's result shape.
from ds4kit.engine.generate import GenerationConfig, GenerationResult, TokenEvent


@dataclass(frozen=True)
class Capabilities:
    """What a target lets a job observe. A job states the ones it needs (`missing`) and reports
    the rest as not measured."""

    logits: bool = False          # full logits at every position (sessions: prefill, decode)
    verify: bool = False          # batched verify rows, bitwise equal to one-by-one decoding
    snapshot: bool = False        # deep copies of the sequence state (snapshot, restore)
    rewind: bool = False          # return a sequence to an earlier position (restore a snapshot)
    drafter: bool = False         # a DSpark drafter runs with the target (speculative decoding)
    token_ids: bool = False       # the generated token ids themselves, not only their text
    top_logprobs: bool = False    # top-K log-probabilities per generated token
    server_timings: bool = False  # the server's own timing and prompt-cache fields

    def as_dict(self) -> dict[str, bool]:
        return asdict(self)

    def missing(self, needs: dict[str, str]) -> list[dict[str, str]]:
        """needs: capability name -> what the job would measure with it. Returns the entries this
        target lacks, as the report's `not_measured` list."""
        names = {f.name for f in fields(self)}
        unknown = set(needs) - names
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {sorted(names)}")
        return [{"capability": name, "what": what} for name, what in needs.items() if not getattr(self, name)]


@dataclass(frozen=True)
class ModelIdentity:
    """What model-card resolution needs: a local file (if any), general.name and architecture."""

    path: Path | None
    name: str | None
    architecture: str | None


@runtime_checkable
class Target(Protocol):
    """What every target offers a job. `load` is called by the job inside its run (so a failure
    is recorded in the report); everything else needs a loaded target."""

    kind: str                     # "embedded"; later "http", "llama.cpp"
    capabilities: Capabilities
    synthetic_model: str | None   # name of the built-in synthetic model it runs, if any

    def load(self) -> None: ...

    def describe(self) -> dict[str, Any]:
        """The manifest's `target` entry: kind, backend, threads, numerics, capabilities."""

    def manifest_entry(self) -> dict[str, Any] | None:
        """The manifest's `model` entry (reports/schema/common.json#/$defs/model)."""

    def identity(self) -> ModelIdentity: ...

    def tokenize(self, text: str, parse_special: bool = True) -> list[int]: ...

    def detokenize(self, ids: Sequence[int]) -> str: ...

    def render_chat(self, messages: list[dict[str, Any]], thinking: bool = False,
                    effort: str | None = None) -> str: ...

    def token_id(self, piece: str) -> int: ...

    def generate(self, prompt_ids: Sequence[int], config: GenerationConfig, *, max_ctx: int,
                 on_token: Callable[[TokenEvent], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> GenerationResult:
        """Generate after the prompt; when should_stop() turns true, return what was generated so
        far with stop_reason "interrupted"."""
