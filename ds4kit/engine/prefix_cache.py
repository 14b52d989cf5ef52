"""A prefix cache: session snapshots keyed by the token ids they cover, so that a new prompt
that starts with an earlier one restores that state and prefills only the rest.

    cache = PrefixCache(model, session_options, max_bytes=2 << 30, cache_dir="~/.cache/x", disk_max_bytes=20 << 30)
    s = model.session(**session_options)
    hit = cache.restore_longest(s, prompt_ids)      # hit.reused tokens restored (0 on a miss)
    logits = hit.logits if hit.whole else s.prefill(prompt_ids[hit.reused:])
    cache.put(s.snapshot(last_logits=logits))       # at a turn boundary, or after generation

Entries are for one model and one set of session options (a snapshot restores only into a
session with the options it was taken with). Memory tier: a byte budget, least recently used
out first, prefix-aware: an entry counts as used whenever an entry it is a prefix of is used
(a long system prompt shared by many conversations stays while any of them is alive). Disk tier
(optional): an entry evicted from memory is written to `cache_dir` as a snapshot file
(atomically: a save cut short leaves only a temporary file, which is never read) under a size
cap, oldest use out first; lookups see both tiers. A file that fails to load (another model, a
corrupt or truncated file) is skipped with a warning, never used.

Rewind: a memory entry that runs past the point where the prompt leaves it, by no more than the
positions its session could still take back (`put(..., rewind_reach=session.max_rewind)`), is
restored and rewound to that point. This is what lets a turn reuse a reply whose re-rendering
re-tokenises its last tokens differently, or a prompt that stops inside an earlier stream. Disk
entries are reused only as exact prefixes.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ds4kit.engine.session import Session, Snapshot
from ds4kit.engine.snapshot_file import SnapshotFileError, read_header

SUFFIX = ".ds4snap"


@dataclass
class CacheHit:
    reused: int                      # tokens restored from the cache (0: a miss)
    tier: str | None = None          # "memory", "disk" or None
    logits: np.ndarray | None = None  # the last reused token's logits, when the entry kept them
    restore_s: float = 0.0
    rewound: int = 0                 # positions of the restored entry taken back to reach `reused`

    @property
    def whole(self) -> bool:
        """The whole prompt was cached with its logits: nothing to prefill."""
        return self.logits is not None


@dataclass
class _Entry:
    tokens: tuple[int, ...]
    snapshot: Snapshot
    bytes: int
    rewind_reach: int = 0            # positions a session restored from it can take back
    last_used: float = field(default_factory=time.monotonic)


def _is_prefix(short: Sequence[int], long: Sequence[int]) -> bool:
    return len(short) <= len(long) and tuple(long[:len(short)]) == tuple(short)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n], dtype=np.int64) != np.asarray(b[:n], dtype=np.int64))
    return int(diff[0]) if diff.size else n


class PrefixCache:
    def __init__(self, model: Any, session_options: dict[str, Any], *, max_bytes: int = 1 << 30,
                 cache_dir: str | os.PathLike | None = None, disk_max_bytes: int | None = None,
                 warn: Callable[[str], None] | None = None):
        self.model = model
        self.options = {"max_ctx": int(session_options["max_ctx"]),
                        "fp8_kv": bool(session_options.get("fp8_kv", True)),
                        "indexer_fp4": bool(session_options.get("indexer_fp4", True))}
        self.max_bytes = int(max_bytes)
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None
        self.disk_max_bytes = disk_max_bytes
        self._warn = warn or (lambda m: print(f"ds4kit WARNING [prefix-cache]: {m}", file=sys.stderr))
        self._mem: dict[tuple[int, ...], _Entry] = {}
        # Disk entries' headers by path, with the (size, mtime) they were read at: a lookup per
        # turn re-reads only files that changed, not every header every time.
        self._headers: dict[Path, tuple[tuple[int, int], Any]] = {}
        self.stats = {"lookups": 0, "memory_hits": 0, "disk_hits": 0, "misses": 0, "evicted": 0,
                      "written_to_disk": 0, "skipped_files": 0, "rewinds": 0}
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)

    # -- what is cached -------------------------------------------------------
    @property
    def memory_bytes(self) -> int:
        return sum(e.bytes for e in self._mem.values())

    def __len__(self) -> int:
        return len(self._mem)

    def entries(self) -> list[dict[str, int]]:
        """The memory tier: tokens and bytes of each entry, shortest first."""
        return [{"tokens": len(e.tokens), "bytes": e.bytes, "snapshot_bytes": e.snapshot.bytes}
                for e in sorted(self._mem.values(), key=lambda e: len(e.tokens))]

    def longest(self) -> Snapshot | None:
        """The memory tier's longest entry (what a report compares with the session state's bytes)."""
        return max(self._mem.values(), key=lambda e: len(e.tokens)).snapshot if self._mem else None

    def _disk_files(self) -> list[Path]:
        if self.cache_dir is None:
            return []
        # Only finished files: a save in progress (or cut short) is a dotted temporary file.
        return [p for p in self.cache_dir.glob("*" + SUFFIX) if not p.name.startswith(".")]

    def _file_for(self, tokens: tuple[int, ...]) -> Path:
        key = hashlib.sha256(repr((self.options, tokens)).encode()).hexdigest()[:32]
        return self.cache_dir / f"{key}{SUFFIX}"

    # -- storing --------------------------------------------------------------
    def put(self, snapshot: Snapshot, rewind_reach: int = 0) -> None:
        """Keep `snapshot` (of this cache's model and options) under the token ids it covers.
        rewind_reach: how many positions the session it was taken from could take back
        (`session.max_rewind`); a lookup may restore it and rewind that far."""
        if snapshot.options != self.options:
            raise ValueError(f"prefix cache for options {self.options} got a snapshot taken with {snapshot.options}")
        tokens = tuple(snapshot.tokens)
        if not tokens:
            return
        size = snapshot.bytes + (snapshot.last_logits.nbytes if snapshot.last_logits is not None else 0)
        self._mem[tokens] = _Entry(tokens, snapshot, size, int(rewind_reach))
        self._evict()

    def _recency(self, e: _Entry) -> float:
        # Prefix-aware: an entry is as recent as the most recent entry it is a prefix of.
        return max(o.last_used for o in self._mem.values() if _is_prefix(e.tokens, o.tokens))

    def _evict(self) -> None:
        while self._mem and self.memory_bytes > self.max_bytes:
            victim = min(self._mem.values(), key=lambda e: (self._recency(e), e.last_used))
            del self._mem[victim.tokens]
            self.stats["evicted"] += 1
            if self.cache_dir is not None:
                self._write_disk(victim)

    def _write_disk(self, e: _Entry) -> None:
        path = self._file_for(e.tokens)
        if not path.exists():
            e.snapshot.save(path)
            self.stats["written_to_disk"] += 1
        os.utime(path)  # its last use, for the disk cap
        self._cap_disk()

    def _cap_disk(self) -> None:
        if self.disk_max_bytes is None:
            return
        files = sorted(self._disk_files(), key=lambda p: p.stat().st_mtime_ns)
        total = sum(p.stat().st_size for p in files)
        while files and total > self.disk_max_bytes:
            p = files.pop(0)
            total -= p.stat().st_size
            p.unlink(missing_ok=True)

    def flush(self) -> None:
        """Write every memory entry to the disk tier (at the end of a run)."""
        if self.cache_dir is not None:
            for e in list(self._mem.values()):
                self._write_disk(e)

    # -- finding --------------------------------------------------------------
    def lookup(self, tokens: Sequence[int]) -> tuple[int, str | None, Any, int]:
        """(length, tier, entry or file, positions to rewind) of the longest cached prefix of
        `tokens` that a session can continue from: a strict prefix, the whole of `tokens` when its
        logits were kept, or (memory entries) the common part of an entry that runs on past it by
        no more than its rewind reach."""
        tokens = tuple(int(t) for t in tokens)
        n = len(tokens)

        def usable(prefix: Sequence[int], has_logits: bool) -> bool:
            return 0 < len(prefix) <= n and _is_prefix(prefix, tokens) and (len(prefix) < n or has_logits)

        best: tuple[int, str | None, Any, int] = (0, None, None, 0)
        for e in self._mem.values():
            if usable(e.tokens, e.snapshot.last_logits is not None):
                cand, back = len(e.tokens), 0
            else:
                # Rewound to where the prompt leaves it; at least the prompt's last token stays to
                # be fed, for its logits.
                cand = min(_common_prefix(e.tokens, tokens), n - 1)
                back = len(e.tokens) - cand
                if cand <= 0 or back > e.rewind_reach:
                    continue
            if cand > best[0] or (cand == best[0] and best[1] is not None and back < best[3]):
                best = (cand, "memory", e, back)
        for p in self._disk_files():
            info = self._header(p)
            if info is None:
                continue
            header, toks = info
            if header.get("options") != self.options:
                continue
            if usable(toks, int(header.get("last_logits", 0)) > 0) and len(toks) > best[0]:
                best = (len(toks), "disk", p, 0)
        return best

    def _header(self, path: Path):
        """read_header(path), remembered while the file's size and mtime stay the same."""
        try:
            st = path.stat()
        except OSError:
            return None
        stamp = (st.st_size, st.st_mtime_ns)
        known = self._headers.get(path)
        if known is None or known[0] != stamp:
            known = (stamp, read_header(path))
            self._headers[path] = known
        return known[1]

    def restore_longest(self, session: Session, tokens: Sequence[int]) -> CacheHit:
        """Restore the longest usable cached prefix of `tokens` into `session` (of this cache's
        options). A miss leaves the session untouched."""
        self.stats["lookups"] += 1
        t0 = time.perf_counter()
        while True:
            n, tier, where, back = self.lookup(tokens)
            if tier != "disk":
                break
            try:
                snap = Snapshot.load(where, self.model)
            except SnapshotFileError as exc:
                self.stats["skipped_files"] += 1
                self._warn(f"skipping cache file: {exc}")
                if not self._quarantine(where):
                    return CacheHit(0)
                continue  # look again without it
            os.utime(where)
            entry = _Entry(tuple(snap.tokens), snap, snap.bytes)
            self._mem[entry.tokens] = entry  # back in memory: it is being used
            self._evict()
            where = entry
            break
        if tier is None:
            self.stats["misses"] += 1
            return CacheHit(0)
        where.last_used = time.monotonic()
        session.restore(where.snapshot)
        if back:
            session.rewind(back)
            self.stats["rewinds"] += 1
        self.stats["memory_hits" if tier == "memory" else "disk_hits"] += 1
        logits = where.snapshot.last_logits if n == len(tokens) and not back else None
        return CacheHit(n, tier, logits, time.perf_counter() - t0, back)

    def _quarantine(self, path: Path) -> bool:
        """Move a bad file out of the lookup's way (it is kept, renamed, for inspection)."""
        try:
            path.rename(path.with_name("." + path.name + ".bad"))
            return True
        except OSError:
            return False
