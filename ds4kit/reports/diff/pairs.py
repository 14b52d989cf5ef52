"""Pairing the items of two reports by key, for the differs that compare item by item."""
from __future__ import annotations

from typing import Any, Iterable


def paired(a: dict[Any, Any], b: dict[Any, Any]) -> list[Any]:
    """The keys in both, in A's order."""
    return [k for k in a if k in b]


def unpaired(a: Iterable[Any], b: Iterable[Any]) -> list[Any]:
    """The keys in one report only, sorted."""
    return sorted(set(a) ^ set(b))


def unpaired_lines(keys: list[Any]) -> list[str]:
    """The markdown that says which keys one report alone holds (nothing when none)."""
    return ["", "In one report only: " + ", ".join(map(str, keys))] if keys else []
