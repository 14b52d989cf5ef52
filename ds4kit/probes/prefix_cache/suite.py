"""What the prefix-cache probe runs: a suite from probes/prefix-cache/<name>.json or a conversation
file, as a list of conversations that share one cache (and one set of earlier token streams).

A suite file:

    {"id": "seed-7k", "description": "...", "max_tokens": 8, "thinking": false,
     "conversations": [{"id": "main", "messages": [ {"role": "system", "content": "..."}, ... ]}]}

A conversation file is what `generate --messages` takes: a JSON list of OpenAI-style messages.
In either, a message's `content` may be a list of parts, each a string or an excerpt of a shipped
text, `{"excerpt": "harbour-chronicle.txt", "words": 4900, "skip_words": 0}` (from probes/texts:
that many words, extended to the end of their sentence), joined without separators.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ds4kit.errors import ConfigError
from ds4kit.resources import probes_dir

SUITE_FOLDER = "prefix-cache"
ROLES = ("system", "user", "assistant")


@dataclass
class Conversation:
    id: str
    messages: list[dict[str, Any]]


@dataclass
class Suite:
    id: str
    description: str
    conversations: list[Conversation]
    max_tokens: int | None = None       # the suite's default --max-tokens
    thinking: bool = False
    source: str = ""
    notes: dict[str, Any] = field(default_factory=dict)


def suite_names() -> list[str]:
    from ds4kit.probes.suites import suite_names as names

    return names(SUITE_FOLDER)


def text_path(name: str) -> Path:
    return probes_dir() / "texts" / name


def excerpt(name: str, words: int, skip_words: int = 0) -> str:
    """`words` words of a shipped text after `skip_words`, extended to the end of the sentence the
    last one is in (whitespace and paragraphs kept as they are)."""
    path = text_path(name)
    if not path.is_file():
        raise ValueError(f"no shipped text {name!r} (looked for {path})")
    text = path.read_text(encoding="utf-8")
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    if skip_words + words > len(spans):
        raise ValueError(f"{name} has {len(spans)} words; asked for {words} after {skip_words}")
    start = spans[skip_words][0]
    end = spans[skip_words + words - 1][1]
    stop = text.find(".", end - 1)
    return text[start:(stop + 1 if stop >= 0 else len(text))]


def _content(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise ValueError(f"{where}: content must be a string or a list of parts")
    out = []
    for k, part in enumerate(value):
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and isinstance(part.get("excerpt"), str) and isinstance(part.get("words"), int):
            try:
                out.append(excerpt(part["excerpt"], part["words"], int(part.get("skip_words", 0))))
            except ValueError as exc:
                raise ValueError(f"{where}, part {k}: {exc}") from None
        else:
            raise ValueError(f"{where}, part {k}: a part is a string or {{\"excerpt\": FILE, \"words\": N}}")
    return "".join(out)


def _messages(raw: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: messages must be a non-empty JSON list")
    out = []
    for i, m in enumerate(raw):
        w = f"{where}, message {i}"
        if not isinstance(m, dict) or m.get("role") not in ROLES or "content" not in m:
            raise ValueError(f"{w}: needs a role ({', '.join(ROLES)}) and a content")
        out.append({**m, "content": _content(m["content"], w)})
    if not any(m["role"] == "user" for m in out):
        raise ValueError(f"{where}: no user message, so no reply to generate")
    return out


def _read_json(path: Path, flag: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file", flag) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON file ({exc})", flag) from None


def load_suite(name: str) -> Suite:
    """A shipped suite by name (or a path to a suite file); ConfigError naming --suite."""
    from ds4kit.probes.suites import suite_path

    path = suite_path(SUITE_FOLDER, name, "--suite")
    doc = _read_json(path, "--suite")
    try:
        if not isinstance(doc, dict) or not isinstance(doc.get("conversations"), list) or not doc["conversations"]:
            raise ValueError("a suite is an object with a non-empty 'conversations' list")
        convs, seen = [], set()
        for k, c in enumerate(doc["conversations"]):
            cid = c.get("id") if isinstance(c, dict) else None
            if not isinstance(cid, str) or not cid or cid in seen:
                raise ValueError(f"conversation {k}: needs an 'id' of its own")
            seen.add(cid)
            convs.append(Conversation(cid, _messages(c.get("messages"), f"conversation {cid!r}")))
        max_tokens = doc.get("max_tokens")
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise ValueError("'max_tokens' must be an integer >= 1")
        return Suite(str(doc.get("id", path.stem)), str(doc.get("description", "")), convs, max_tokens,
                     bool(doc.get("thinking", False)), str(path), dict(doc.get("notes", {})))
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}", "--suite") from None


def load_conversation_file(path: Path) -> Suite:
    """A `generate --messages` file as a one-conversation suite; ConfigError naming --conversation."""
    doc = _read_json(Path(path), "--conversation")
    try:
        messages = _messages(doc, str(path))
    except ValueError as exc:
        raise ConfigError(str(exc), "--conversation") from None
    return Suite(Path(path).stem, f"conversation file {path}", [Conversation("conversation", messages)],
                 source=str(path))
