"""Probe suites: JSON files under probes/<probe>/ (ds4kit.resources.probes_dir()), or a path.

    suite = load_suite("identity", "quick")          # probes/identity/quick.json
    suite = load_suite("identity", "my-suite.json")  # a file of the same shape

A suite is {"id": ..., "description": ..., "items": [{"id": ..., ...}, ...]}; item ids are
unique (per-item logs are keyed by them). Each probe checks the fields its items need.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ds4kit.resources import probes_dir


def suite_names(probe: str) -> list[str]:
    folder = probes_dir() / probe
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def suite_path(probe: str, name_or_path: str | Path, flag: str = "--suite") -> Path:
    """The file of a shipped suite of `probe` named `name_or_path`, or that path itself when it
    looks like one (ends in .json, holds a '/', or is a file); ConfigError naming `flag` otherwise.
    Every probe finds its suites here; each parses its own item format."""
    from ds4kit.errors import ConfigError

    text = str(name_or_path)
    if text.endswith(".json") or "/" in text or Path(text).is_file():
        path = Path(text)
        if not path.is_file():
            raise ConfigError(f"{path}: no such suite file", flag)
        return path
    path = probes_dir() / probe / f"{text}.json"
    if not path.is_file():
        known = ", ".join(suite_names(probe)) or "none"
        raise ConfigError(f"no {probe} suite named {text!r}; shipped: {known} (or give a path to a .json file)", flag)
    return path


def load_suite(probe: str, name_or_path: str | Path) -> dict[str, Any]:
    """The suite, with `path` and `sha256` (of its bytes) added; ValueError names what is wrong."""
    p = suite_path(probe, name_or_path)
    raw = p.read_bytes()
    try:
        suite = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not valid JSON ({exc})") from None
    if not isinstance(suite, dict) or not isinstance(suite.get("items"), list) or not suite["items"]:
        raise ValueError(f"{p}: a suite is an object with a non-empty 'items' list")
    seen = set()
    for i, item in enumerate(suite["items"]):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            raise ValueError(f"{p}: items[{i}] needs a string 'id'")
        if item["id"] in seen:
            raise ValueError(f"{p}: item id {item['id']!r} appears twice")
        seen.add(item["id"])
    suite.setdefault("id", p.stem)
    suite["path"] = str(p)
    suite["sha256"] = hashlib.sha256(raw).hexdigest()
    return suite
