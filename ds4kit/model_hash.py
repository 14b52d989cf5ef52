"""sha256 of model files, cached by (real path, size, mtime) so a 100 GB GGUF is hashed once.

The cache is a small JSON file in ``$DS4KIT_CACHE_DIR`` (default ``~/.cache/ds4kit``). An entry is
reused only when the file's size and modification time (in ns) are unchanged; anything else means
the file may have changed and it is hashed again.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ds4kit.reports.atomic import atomic_write_json

CHUNK = 16 << 20


def cache_dir() -> Path:
    return Path(os.environ.get("DS4KIT_CACHE_DIR") or Path.home() / ".cache" / "ds4kit")


def _cache_file() -> Path:
    return cache_dir() / "sha256-cache.json"


@dataclass(frozen=True)
class HashResult:
    path: str
    size_bytes: int
    mtime_ns: int
    sha256: str
    cached: bool


def _load_cache() -> dict:
    """The cache, or {} when it is missing or damaged (it is only a cache: the file is rehashed)."""
    try:
        cache = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return {}
    return cache if isinstance(cache, dict) else {}


def _valid_entry(entry: object) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("sha256"), str) and len(entry["sha256"]) == 64
            and all(c in "0123456789abcdef" for c in entry["sha256"]))


def sha256_file(path: str | os.PathLike, progress: Callable[[int, int], None] | None = None) -> HashResult:
    """Hash ``path`` (or reuse a cache entry whose size and mtime still match)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise FileNotFoundError(f"{path}: cannot stat model file ({exc.strerror})") from exc
    cache = _load_cache()
    entry = cache.get(real)
    if _valid_entry(entry) and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
        return HashResult(real, st.st_size, st.st_mtime_ns, entry["sha256"], cached=True)
    h = hashlib.sha256()
    done = 0
    with open(real, "rb") as f:
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            h.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, st.st_size)
    digest = h.hexdigest()
    # Re-read the cache: another process may have added entries meanwhile.
    cache = _load_cache()
    cache[real] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
    atomic_write_json(_cache_file(), cache)
    return HashResult(real, st.st_size, st.st_mtime_ns, digest, cached=False)


def sha256_with_progress(path: str | os.PathLike, quiet: bool = False) -> HashResult:
    """sha256_file with a tqdm bar on stderr for files big enough to take a while."""
    size = os.path.getsize(path)
    if quiet or size < (512 << 20):
        return sha256_file(path)
    from tqdm import tqdm

    with tqdm(total=size, unit="B", unit_scale=True, desc=f"sha256 {Path(path).name}", leave=False) as bar:
        last = [0]

        def step(done: int, total: int) -> None:
            bar.update(done - last[0])
            last[0] = done

        return sha256_file(path, progress=step)
