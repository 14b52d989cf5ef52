"""model-tokenize: which result fields differ (ds4kit.reports.diff.field_changes)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.reports.diff import field_changes

KIND = "model-tokenize"
IGNORE: tuple[str, ...] = ()  # timing fields: they differ on every run


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    return field_changes.diff_results(a, b, IGNORE)


def markdown(d: dict[str, Any]) -> str:
    return field_changes.markdown(d)
