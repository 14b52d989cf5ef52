"""Reading append-only JSONL files back (items.jsonl, samples.jsonl)."""
from __future__ import annotations

import json
import os
from typing import Any


def read_jsonl_objects(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every complete record: one JSON object per line, up to the first line that is torn (a kill
    mid-write), not JSON, or not an object. Later lines are not trusted: what follows a damaged
    line was written after it."""
    out = []
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.endswith("\n"):
                break
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                break
            if not isinstance(rec, dict):
                break
            out.append(rec)
    return out
