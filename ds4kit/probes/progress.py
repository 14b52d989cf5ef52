"""A rich progress bar for probes (stderr): a count of steps, labelled with what runs now."""
from __future__ import annotations

from typing import Any


class TurnProgress:
    """RepProgress with a label that stays until the next describe()."""

    def __init__(self, total: int, enabled: bool):
        from ds4kit.bench.progress import RepProgress

        self._bar, self._label = RepProgress(total, enabled), "starting"

    def __enter__(self) -> "TurnProgress":
        self._bar.__enter__()
        return self

    def describe(self, text: str) -> None:
        self._label = text
        self._bar.describe(text)

    def step(self) -> None:
        self._bar.step(self._label)

    def __exit__(self, *exc: Any) -> None:
        self._bar.__exit__(*exc)
