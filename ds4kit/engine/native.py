"""The compiled engine module (ds4kit._engine), imported on first use with a clear error when
it was never built."""
from __future__ import annotations

from types import ModuleType


def engine_module() -> ModuleType:
    try:
        from ds4kit import _engine
    except ImportError as exc:  # pragma: no cover - only without a built engine
        raise RuntimeError(
            "the ds4kit engine extension is not built; run `pip install .` (or scripts/dev-build in a checkout)"
        ) from exc
    return _engine
