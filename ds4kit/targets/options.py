"""Building a target from the options every engine command takes, in one place.

    TargetOptions(model=None | path, backend="auto", threads=None, numerics=Numerics(), fallback="demo",
                  target="embedded" | "llama.cpp")

`build_target` checks the options (no model is loaded), and without a model falls back to a
built-in synthetic model, saying so: this is the only place that fallback is decided. `target`
picks what runs the model: our engine (`embedded`) or llama.cpp in process (`llama.cpp`,
ds4kit.targets.llama_cpp_target); an HTTP server will be another choice here.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ds4kit.errors import ConfigError
from ds4kit.engine.model import BACKENDS as BACKEND_CHOICES
from ds4kit.engine.model import usable_cpus

TARGET_CHOICES = ("embedded", "llama.cpp")


@dataclass(frozen=True)
class Numerics:
    """Roundings the engine applies (D's semantics by default; both off is llama.cpp's)."""

    fp8_kv: bool = True        # stored KV rows go through an FP8-E4M3 round trip
    indexer_fp4: bool = True   # the indexer's keys and queries go through FP4 rounding

    def as_dict(self) -> dict[str, bool]:
        return asdict(self)


@dataclass(frozen=True)
class TargetOptions:
    model: str | os.PathLike | None = None
    backend: str = "auto"
    threads: int | None = None             # None: every CPU this process may use
    numerics: Numerics = field(default_factory=Numerics)
    fallback: str = "demo"                 # synthetic model used without `model` (ds4kit.synth.demo)
    model_flag: str = "--model"            # how the user names the model, for messages
    drafter: str | os.PathLike | None = None  # a DSpark drafter GGUF: generate speculatively
    spec_width: int = 0                    # 0: the automatic width policy; 1..8 fixed
    target: str = "embedded"               # what runs it: TARGET_CHOICES

    def check(self) -> None:
        if self.target not in TARGET_CHOICES:
            raise ConfigError(f"{self.target!r} is not one of {', '.join(TARGET_CHOICES)}", "--target")
        if self.backend not in BACKEND_CHOICES:
            raise ConfigError(f"{self.backend!r} is not one of {', '.join(BACKEND_CHOICES)}", "--backend")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ConfigError(f"must be a positive number of threads, got {self.threads!r}", "--threads")
        if self.model is not None:
            path = Path(self.model)
            if not path.exists():
                raise ConfigError(f"{path}: model file not found", self.model_flag)
            if not path.is_file():
                raise ConfigError(f"{path}: not a file", self.model_flag)
        if self.drafter is not None and not Path(self.drafter).is_file():
            raise ConfigError(f"{self.drafter}: drafter file not found", "--drafter")
        if not isinstance(self.spec_width, int) or not 0 <= self.spec_width <= 8:
            raise ConfigError(f"must be auto or a width 1..8, got {self.spec_width!r}", "--spec-width")

    @property
    def resolved_threads(self) -> int:
        """The thread count to run with: as given, else every CPU this process may use (a
        container's or taskset's share, not the whole machine)."""
        return self.threads or usable_cpus()

    def spec(self) -> dict[str, Any]:
        """Plain JSON for a child process that builds the same target (ds4kit.bench.engine_worker)."""
        return {"model": str(Path(self.model).resolve()) if self.model is not None else None,
                "backend": self.backend, "threads": self.threads, "numerics": self.numerics.as_dict(),
                "fallback": self.fallback,
                "drafter": str(Path(self.drafter).resolve()) if self.drafter is not None else None,
                "spec_width": self.spec_width, "target": self.target}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> "TargetOptions":
        return cls(model=spec["model"], backend=spec["backend"], threads=spec["threads"],
                   numerics=Numerics(**spec["numerics"]), fallback=spec.get("fallback", "demo"),
                   drafter=spec.get("drafter"), spec_width=spec.get("spec_width", 0),
                   target=spec.get("target", "embedded"))


def choose_model(options: TargetOptions, say: Callable[[str], None]) -> tuple[Path, str | None]:
    """(model path, name of the synthetic model used or None). Writes the synthetic model on
    first use; says which model runs when none was given."""
    if options.model is not None:
        return Path(options.model), None
    from ds4kit.synth.demo import SYNTHETIC_MODELS, synthetic_model_file, synthetic_model_path

    description = SYNTHETIC_MODELS[options.fallback].description
    path = synthetic_model_file(options.fallback)
    if not path.is_file():
        say(f"(no {options.model_flag}: writing {description} once to {path})")
    path = synthetic_model_path(options.fallback)
    say(f"(no {options.model_flag}: using {description}, {path})")
    return path, options.fallback


def build_target(options: TargetOptions, say: Callable[[str], None] = lambda m: None):
    """An unloaded target for these options: the embedded engine or llama.cpp (options.target)."""
    options.check()
    path, synthetic = choose_model(options, say)
    if options.target == "llama.cpp":
        from ds4kit.targets.llama_cpp_target import LlamaCppTarget

        return LlamaCppTarget(path, options, synthetic_model=synthetic)
    from ds4kit.targets.embedded import EmbeddedTarget

    return EmbeddedTarget(path, options, synthetic_model=synthetic)


def model_path_or_synthetic(model: str | os.PathLike | None, say: Callable[[str], None],
                            model_flag: str = "MODEL", fallback: str = "demo") -> Path:
    """For commands that read a model file without running it (model info, tokenize, card)."""
    options = TargetOptions(model=model, fallback=fallback, model_flag=model_flag)
    options.check()
    return choose_model(options, say)[0]
