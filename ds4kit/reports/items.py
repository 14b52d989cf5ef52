"""Append-only per-item JSONL log: each finished item is one line, flushed and
fsynced as it completes, so a crash or kill loses nothing and ``--resume`` can
skip what is done."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

from ds4kit.reports.atomic import _json_default
from ds4kit.reports.jsonl import read_jsonl_objects


class ItemLog:
    def __init__(self, path: str | os.PathLike, key: str = "id"):
        self.path = Path(path)
        self.key = key
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def read(self) -> list[dict[str, Any]]:
        """All complete records. A torn last line (killed mid-write) is ignored."""
        if not self.path.exists():
            return []
        return read_jsonl_objects(self.path)

    def done_keys(self) -> set:
        keys = set()
        for rec in self.read():
            try:
                keys.add(rec[self.key])
            except (KeyError, TypeError):  # no key, or a key that is not a plain value
                continue
        return keys

    def _drop_torn_tail(self) -> None:
        # Truncate a partial last line so the next append starts on a fresh line.
        if not self.path.exists():
            return
        with open(self.path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                f.truncate(cut)

    def append(self, record: dict[str, Any]) -> None:
        if self.key not in record:
            raise ValueError(f"item record lacks its key field {self.key!r}")
        self._drop_torn_tail()
        line = json.dumps(record, ensure_ascii=False, default=_json_default, allow_nan=False)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.read())
