"""The built-in synthetic models commands fall back to without a model: written once into the
cache dir, then reused.

    demo    the `demo` preset: what `generate`, `model info|tokenize|card` run without a model
    medium  the `medium` preset (about 440 MB): what `bench engine` measures without a model
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# Bump when generation changes, so a cached demo file from an older ds4kit is not reused.
SYNTH_FORMAT_VERSION = 1
DEMO_SEED = 0


@dataclass(frozen=True)
class SyntheticModel:
    name: str
    preset: str
    file_stem: str      # cache file name without the format version
    description: str    # what a user is told when a command falls back to it


SYNTHETIC_MODELS = {
    "demo": SyntheticModel("demo", "demo", f"demo-target-s{DEMO_SEED}",
                           "the built-in synthetic demo model (random weights: its text is meaningless)"),
    "medium": SyntheticModel("medium", "medium", f"bench-medium-s{DEMO_SEED}",
                             "the medium synthetic model (random weights, about 440 MB)"),
}


def cache_dir() -> Path:
    root = os.environ.get("DS4KIT_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "ds4kit"


def synthetic_model_file(name: str) -> Path:
    """Where the synthetic model `name` is cached (it may not be written yet)."""
    model = SYNTHETIC_MODELS[name]
    return cache_dir() / "synth" / f"{model.file_stem}-v{SYNTH_FORMAT_VERSION}.gguf"


def synthetic_model_path(name: str) -> Path:
    """Path of the synthetic model `name` (a key of SYNTHETIC_MODELS), writing it on first use."""
    from ds4kit.synth.build import write_target
    from ds4kit.synth.config import preset

    if name not in SYNTHETIC_MODELS:
        raise ValueError(f"unknown synthetic model {name!r}; known: {', '.join(SYNTHETIC_MODELS)}")
    path = synthetic_model_file(name)
    if not path.is_file():  # the writer renames a finished temp file into place, so existence means complete
        path.parent.mkdir(parents=True, exist_ok=True)
        write_target(path, preset(SYNTHETIC_MODELS[name].preset), seed=DEMO_SEED)
    return path


def demo_model_path(*, drafter: bool = False) -> Path:
    """Path of the demo target (or its DSpark drafter), writing it on first use."""
    if not drafter:
        return synthetic_model_path("demo")
    from ds4kit.synth.build import write_drafter
    from ds4kit.synth.config import preset

    path = cache_dir() / "synth" / f"demo-dspark-s{DEMO_SEED}-v{SYNTH_FORMAT_VERSION}.gguf"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_drafter(path, preset("demo"), seed=DEMO_SEED)
    return path
