"""A small, deterministic, streaming GGUF v3 writer.

Why our own and not gguf-py's GGUFWriter: gguf-py rejects type ids it does not
know (the ROCmFP types 100-107 that Lucebox files use), and a writer that takes
tensor sizes up front lets us emit the header first and then generate each
tensor's bytes one at a time, so a 400 MB model never sits in memory.
Output is byte-identical for identical inputs (no timestamps, fixed key order).
"""
from __future__ import annotations

import os
import struct
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Sequence

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# GGUF metadata value types
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL = range(8)
T_STRING, T_ARRAY, T_UINT64, T_INT64, T_FLOAT64 = 8, 9, 10, 11, 12

_SCALAR_FMT = {
    T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
    T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q", T_FLOAT64: "<d",
}
_NP_DTYPE = {
    T_UINT8: "<u1", T_INT8: "<i1", T_UINT16: "<u2", T_INT16: "<i2", T_UINT32: "<u4",
    T_INT32: "<i4", T_FLOAT32: "<f4", T_BOOL: "<u1", T_UINT64: "<u8", T_INT64: "<i8", T_FLOAT64: "<f8",
}


@dataclass(frozen=True)
class KV:
    """One metadata entry. For arrays, `elem_type` is the element type."""
    key: str
    vtype: int
    value: object
    elem_type: int | None = None


def u32(key: str, v: int) -> KV: return KV(key, T_UINT32, int(v))
def i32(key: str, v: int) -> KV: return KV(key, T_INT32, int(v))
def f32(key: str, v: float) -> KV: return KV(key, T_FLOAT32, float(v))
def boolean(key: str, v: bool) -> KV: return KV(key, T_BOOL, bool(v))
def string(key: str, v: str) -> KV: return KV(key, T_STRING, str(v))
def array(key: str, elem_type: int, values: Sequence) -> KV: return KV(key, T_ARRAY, values, elem_type)


@dataclass(frozen=True)
class TensorSpec:
    """A tensor to be written: ggml `ne` order shape (innermost first)."""
    name: str
    shape: tuple[int, ...]
    type_id: int
    nbytes: int


def _pad(n: int) -> int:
    return (ALIGNMENT - n % ALIGNMENT) % ALIGNMENT


def _string_bytes(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value_bytes(vtype: int, value: object, elem_type: int | None) -> bytes:
    if vtype == T_STRING:
        return _string_bytes(value)  # type: ignore[arg-type]
    if vtype == T_ARRAY:
        assert elem_type is not None
        values = value
        head = struct.pack("<IQ", elem_type, len(values))  # type: ignore[arg-type]
        if elem_type == T_STRING:
            return head + b"".join(_string_bytes(s) for s in values)  # type: ignore[union-attr]
        return head + np.asarray(values, dtype=_NP_DTYPE[elem_type]).tobytes()
    return struct.pack(_SCALAR_FMT[vtype], value)


def _kv_bytes(kv: KV) -> bytes:
    return (_string_bytes(kv.key) + struct.pack("<I", kv.vtype)
            + _value_bytes(kv.vtype, kv.value, kv.elem_type))


def write_gguf(path: str | Path, kvs: Iterable[KV], tensors: Sequence[TensorSpec],
               produce: Callable[[TensorSpec], bytes],
               on_tensor: Callable[[TensorSpec], None] | None = None, workers: int = 1) -> None:
    """Write a GGUF file. `produce(spec)` returns exactly spec.nbytes bytes for each tensor;
    `on_tensor` is a progress hook. With workers > 1, forked processes produce the tensors
    and write each at its offset (produce must depend on the spec alone): the same bytes."""
    kvs = list(kvs)
    keys = [kv.key for kv in kvs]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"duplicate GGUF keys: {dup}")
    names = [t.name for t in tensors]
    if len(set(names)) != len(names):
        raise ValueError("duplicate tensor names: " + ", ".join(sorted({n for n in names if names.count(n) > 1})))
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")  # unique: concurrent writers never collide
    try:
        with open(tmp, "wb") as f:
            if workers > 1 and len(tensors) > 1:
                _write_parallel(f, kvs, tensors, produce, on_tensor, workers)
            else:
                _write_all(f, kvs, tensors, produce, on_tensor)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a file of the final size, mostly zeros: nothing to keep
        raise
    tmp.replace(path)


def _write_header(f: BinaryIO, kvs: list[KV], tensors: Sequence[TensorSpec]) -> list[int]:
    """Header, tensor infos and padding; returns each tensor's offset in the file."""
    f.write(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kvs)))
    for kv in kvs:
        f.write(_kv_bytes(kv))
    offset = 0
    for t in tensors:
        f.write(_string_bytes(t.name))
        f.write(struct.pack("<I", len(t.shape)))
        f.write(struct.pack(f"<{len(t.shape)}Q", *t.shape))
        f.write(struct.pack("<IQ", t.type_id, offset))
        offset += t.nbytes + _pad(t.nbytes)
    f.write(b"\0" * _pad(f.tell()))
    starts, at = [], f.tell()
    for t in tensors:
        starts.append(at)
        at += t.nbytes + _pad(t.nbytes)
    return starts


def _checked(t: TensorSpec, data: bytes) -> bytes:
    if len(data) != t.nbytes:
        raise AssertionError(f"tensor {t.name}: produced {len(data)} bytes, expected {t.nbytes}")
    return data


def _write_all(f: BinaryIO, kvs: list[KV], tensors: Sequence[TensorSpec],
               produce: Callable[[TensorSpec], bytes],
               on_tensor: Callable[[TensorSpec], None] | None) -> None:
    _write_header(f, kvs, tensors)
    for t in tensors:
        f.write(_checked(t, produce(t)))
        f.write(b"\0" * _pad(t.nbytes))
        if on_tensor is not None:
            on_tensor(t)


# What forked workers produce from (set before the pool forks; fork copies it).
_PARALLEL: tuple[Callable[[TensorSpec], bytes], int] | None = None


def _produce_at(t: TensorSpec, offset: int) -> str:
    produce, fd = _PARALLEL  # type: ignore[misc]
    data = _checked(t, produce(t))
    done = 0
    while done < len(data):  # pwrite may write less than asked
        done += os.pwrite(fd, memoryview(data)[done:], offset + done)
    return t.name


def _worker_died(futures: dict, workers: int) -> RuntimeError:
    """What to say when a worker vanished (no Python error: the OS killed it, as a rule for memory)."""
    unfinished = [t for fut, t in futures.items() if not fut.done() or fut.cancelled() or fut.exception() is not None]
    biggest = max(unfinished, key=lambda t: t.nbytes)
    return RuntimeError(
        f"a worker process died while {len(unfinished)} of {len(futures)} tensors were unwritten (the OS kills a "
        f"process that runs out of memory; each of the {workers} workers holds one tensor at a time, the largest "
        f"left is {biggest.name}, {biggest.nbytes / 1e6:.0f} MB in the file): rerun with fewer jobs (-j)")


def _write_parallel(f: BinaryIO, kvs: list[KV], tensors: Sequence[TensorSpec],
                    produce: Callable[[TensorSpec], bytes],
                    on_tensor: Callable[[TensorSpec], None] | None, workers: int) -> None:
    global _PARALLEL
    starts = _write_header(f, kvs, tensors)
    last = tensors[-1]
    f.flush()
    f.truncate(starts[-1] + last.nbytes + _pad(last.nbytes))  # the padding reads as zeros
    _PARALLEL = (produce, f.fileno())
    by_name = {t.name: t for t in tensors}
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork")) as pool:
            futures = {pool.submit(_produce_at, t, at): t for t, at in zip(tensors, starts)}
            for fut in as_completed(futures):
                try:
                    name = fut.result()  # re-raises a worker's error
                except BrokenProcessPool:
                    raise _worker_died(futures, workers) from None
                if on_tensor is not None:
                    on_tensor(by_name[name])
    finally:
        _PARALLEL = None
