"""A minimal GGUF header parser for files gguf-py cannot open (ROCmFP type ids 100-107).

Independent of ds4kit's writer: it follows the GGUF v3 format description only.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


@dataclass
class RawTensor:
    name: str
    shape: tuple[int, ...]
    type_id: int
    offset: int  # absolute file offset of the data


def read_raw(path) -> tuple[dict, list[RawTensor], bytes]:
    buf = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from(fmt, buf, pos)
        pos += struct.calcsize(fmt)
        return vals[0] if len(vals) == 1 else vals

    def string():
        nonlocal pos
        n = take("<Q")
        s = buf[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return [value(et) for _ in range(n)]
        return take(_SCALAR[t])

    assert buf[:4] == b"GGUF", "not a GGUF file"
    pos = 4
    version, n_tensors, n_kv = take("<I"), take("<Q"), take("<Q")
    assert version == 3
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        nd = take("<I")
        shape = tuple(take("<Q") for _ in range(nd))
        infos.append((name, shape, take("<I"), take("<Q")))
    align = kv.get("general.alignment", 32)
    data_start = pos + (-pos) % align
    return kv, [RawTensor(n, s, t, data_start + o) for n, s, t, o in infos], buf
