"""Locate data shipped with ds4kit (schemas, probe suites, model cards).

An installed wheel carries them under ds4kit/_data; a source checkout keeps them
at the repository's top level (reports/schema, probes). Both are searched.
"""
from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent
_REPO = _PKG.parent


def _first_existing(*candidates: Path) -> Path:
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError(
        "ds4kit data folder not found; looked in: " + ", ".join(str(c) for c in candidates)
    )


def schema_dir() -> Path:
    return _first_existing(_PKG / "_data" / "schema", _REPO / "reports" / "schema")


def probes_dir() -> Path:
    return _first_existing(_PKG / "_data" / "probes", _REPO / "probes")
