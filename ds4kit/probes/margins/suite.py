"""Margins suites (probes/margins/<name>.json): prompts whose tokens the probe verifies.

    {"suite": "margins-default", "description": "...",
     "items": [{"id": "prose", "prompt": "..."}, ...]}

Each prompt is rendered with the DeepSeek V4 chat template as one user message (`"raw": true`
tokenizes it as is instead). A suite is named (a file in the shipped folder) or given as a path.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ds4kit.errors import ConfigError

FLAG = "--suite"


@dataclass(frozen=True)
class MarginsItem:
    id: str
    prompt: str
    raw: bool = False


@dataclass(frozen=True)
class MarginsSuite:
    name: str
    path: Path
    items: tuple[MarginsItem, ...]


def suite_names() -> list[str]:
    from ds4kit.probes.suites import suite_names as names

    return names("margins")


def resolve_suite_path(suite: str | Path) -> Path:
    """A shipped suite's name, or the path of a suite file (ds4kit.probes.suites.suite_path)."""
    from ds4kit.probes.suites import suite_path

    return suite_path("margins", suite, FLAG)


def load_suite(suite: str | Path) -> MarginsSuite:
    """The suite, or a ConfigError naming the file and the key at fault."""
    path = resolve_suite_path(suite)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON suite ({exc})", FLAG) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a suite is a JSON object with an 'items' list", FLAG)
    items = data.get("items")
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{path}: key 'items' must be a non-empty list", FLAG)
    out, seen = [], set()
    for i, item in enumerate(items):
        where = f"{path}: items[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where} must be an object with 'id' and 'prompt'", FLAG)
        iid, prompt, raw = item.get("id"), item.get("prompt"), item.get("raw", False)
        if not isinstance(iid, str) or not iid:
            raise ConfigError(f"{where}: key 'id' must be a non-empty string", FLAG)
        if iid in seen:
            raise ConfigError(f"{where}: id {iid!r} appears twice", FLAG)
        if not isinstance(prompt, str) or not prompt.strip():
            raise ConfigError(f"{where} ({iid}): key 'prompt' must be a non-empty string", FLAG)
        if not isinstance(raw, bool):
            raise ConfigError(f"{where} ({iid}): key 'raw' must be true or false", FLAG)
        seen.add(iid)
        out.append(MarginsItem(iid, prompt, raw))
    name = data.get("suite", path.stem)
    if not isinstance(name, str):
        raise ConfigError(f"{path}: key 'suite' must be a string", FLAG)
    return MarginsSuite(name, path, tuple(out))
