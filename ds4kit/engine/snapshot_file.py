"""Snapshot files: a session's state on disk, to restore in a later process.

Layout (little-endian), written atomically (a temporary file in the same folder, fsynced,
then renamed: a reader never sees half a file under the final name):

    b"DS4KSNAP" | u32 format version | u32 header length | header (UTF-8 JSON)
    | token ids (int32 x pos) | state arrays (float32, lengths in the header)
    | the last token's logits (float32, optional) | sha256 of everything before it (32 bytes)

The header names the model (sha256 and size of the GGUF), the session options the state was
made with (max_ctx, fp8_kv, indexer_fp4), the position, and the array lengths. Loading refuses,
with a message saying which: another file type, another format version, a truncated or corrupt
file, a snapshot of another model; restoring into a session with other options is refused by
the session.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from ds4kit.reports.atomic import atomic_write_parts

MAGIC = b"DS4KSNAP"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sII")
_DIGEST = 32


class SnapshotFileError(ValueError):
    """A snapshot file that cannot be used here; the message says why."""


def model_identity(model: Any) -> dict[str, Any]:
    from ds4kit.model_hash import sha256_file

    h = sha256_file(model.path)  # cached by path, size and mtime: a 100 GB file is hashed once
    return {"sha256": h.sha256, "size_bytes": h.size_bytes}


def write_snapshot(path: str | os.PathLike, native: Any, model: Any, last_logits: Any = None) -> Path:
    """last_logits: the logits of the last token the state covers (optional), so that a later
    restore can continue without feeding a token again."""
    path = Path(path)
    image = native.image()
    arrays = [np.ascontiguousarray(a, dtype="<f4") for a in image["arrays"]]
    logits = np.ascontiguousarray(last_logits if last_logits is not None else np.zeros(0), dtype="<f4")
    tokens = np.asarray(native.tokens, dtype="<i4")
    header = {
        "format_version": FORMAT_VERSION,
        "model": model_identity(model),
        "options": {"max_ctx": native.max_ctx, "fp8_kv": native.fp8_kv, "indexer_fp4": native.indexer_fp4},
        "pos": image["pos"],
        "hwm": image["hwm"],
        "n_tokens": int(tokens.size),
        "array_lengths": [int(a.size) for a in arrays],
        "last_logits": int(logits.size),
    }
    head = json.dumps(header, sort_keys=True).encode("utf-8")
    # One array's bytes at a time: a large state is not copied whole.
    parts = itertools.chain((_PREFIX.pack(MAGIC, FORMAT_VERSION, len(head)), head, tokens.tobytes()),
                            (a.tobytes() for a in arrays), (logits.tobytes(),))
    return atomic_write_parts(path, _with_digest(parts))


def _with_digest(parts):
    """The parts, then the sha256 of all of them."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
        yield part
    yield digest.digest()


def read_header(path: str | os.PathLike) -> tuple[dict[str, Any], list[int]] | None:
    """The header and token ids of a snapshot file, read without its arrays (a cache index
    scans many files); None when it is not a readable snapshot of this format (the full load
    checks size, checksum and model)."""
    try:
        with open(path, "rb") as f:
            prefix = f.read(_PREFIX.size)
            if len(prefix) < _PREFIX.size:
                return None
            magic, version, head_len = _PREFIX.unpack(prefix)
            if magic != MAGIC or version != FORMAT_VERSION or head_len > 1 << 20:
                return None
            header = json.loads(f.read(head_len).decode("utf-8"))
            n = int(header["n_tokens"])
            raw = f.read(4 * n)
            if len(raw) != 4 * n:
                return None
            return header, np.frombuffer(raw, dtype="<i4").tolist()
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None


def read_snapshot(path: str | os.PathLike, model: Any) -> dict[str, Any]:
    """The header, token ids and arrays of a snapshot file of `model`, checked."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SnapshotFileError(f"{path}: cannot read the snapshot ({exc.strerror})") from None
    if len(data) < _PREFIX.size or data[:8] != MAGIC:
        raise SnapshotFileError(f"{path}: not a ds4kit snapshot file (no {MAGIC.decode()} magic)")
    _, version, head_len = _PREFIX.unpack_from(data)
    if version != FORMAT_VERSION:
        raise SnapshotFileError(f"{path}: snapshot format version {version}; this ds4kit reads version "
                                f"{FORMAT_VERSION}")
    head_end = _PREFIX.size + head_len
    try:
        header = json.loads(data[_PREFIX.size:head_end].decode("utf-8"))
        n_tokens = int(header["n_tokens"])
        lengths = [int(n) for n in header["array_lengths"]]
        n_logits = int(header["last_logits"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise SnapshotFileError(f"{path}: corrupt snapshot header") from None
    expected = head_end + 4 * n_tokens + 4 * sum(lengths) + 4 * n_logits + _DIGEST
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "longer than its header says"
        raise SnapshotFileError(f"{path}: snapshot file {what}: {len(data)} bytes, expected {expected}")
    if hashlib.sha256(data[:-_DIGEST]).digest() != data[-_DIGEST:]:
        raise SnapshotFileError(f"{path}: corrupt snapshot: the checksum does not match its contents")
    want = model_identity(model)
    if header.get("model") != want:
        raise SnapshotFileError(f"{path}: snapshot of another model (sha256 {header.get('model', {}).get('sha256')}; "
                                f"this model is {want['sha256']}, {model.path})")
    off = head_end
    tokens = np.frombuffer(data, dtype="<i4", count=n_tokens, offset=off)
    off += 4 * n_tokens
    arrays = []
    for n in lengths:
        arrays.append(np.frombuffer(data, dtype="<f4", count=n, offset=off))
        off += 4 * n
    logits = np.frombuffer(data, dtype="<f4", count=n_logits, offset=off) if n_logits else None
    return {"header": header, "tokens": tokens, "arrays": arrays, "last_logits": logits}
