"""A rich progress bar over benchmark repetitions, on stderr (stdout carries -o output)."""
from __future__ import annotations

from typing import Any


class RepProgress:
    def __init__(self, total: int, enabled: bool = True):
        self._total = total
        self._enabled = enabled
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> "RepProgress":
        if self._enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), console=Console(stderr=True), transient=False)
            self._progress.__enter__()
            self._task = self._progress.add_task("starting", total=self._total)
        return self

    def describe(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=text)

    def step(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=1, description=text)

    def skip(self, n: int) -> None:
        """Count repetitions that will not run (engine missing or failed) as done."""
        if self._progress is not None and n > 0:
            self._progress.update(self._task, advance=n)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
