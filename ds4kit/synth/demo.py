"""The built-in demo model: written once into the cache dir, then reused."""
from __future__ import annotations

import os
from pathlib import Path

# Bump when generation changes, so a cached demo file from an older ds4kit is not reused.
SYNTH_FORMAT_VERSION = 1
DEMO_SEED = 0


def cache_dir() -> Path:
    root = os.environ.get("DS4KIT_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "ds4kit"


def demo_model_path(*, drafter: bool = False) -> Path:
    """Path of the demo target (or its DSpark drafter), writing it on first use."""
    from ds4kit.synth.build import write_drafter, write_target
    from ds4kit.synth.config import preset

    folder = cache_dir() / "synth"
    folder.mkdir(parents=True, exist_ok=True)
    kind = "dspark" if drafter else "target"
    path = folder / f"demo-{kind}-s{DEMO_SEED}-v{SYNTH_FORMAT_VERSION}.gguf"
    if not path.is_file():  # the writer renames a finished temp file into place, so existence means complete
        write = write_drafter if drafter else write_target
        write(path, preset("demo"), seed=DEMO_SEED)
    return path
