"""Deterministic mutations of small, valid GGUF files for the fuzz test.

mutate(seeds, fields, i) is a pure function of the case index i, so a failing
case is reproduced by its index alone. Mutations: bit flips, random bytes,
"interesting" integers written over the structural fields (counts, lengths,
type ids, dims, offsets), truncations, splices between seeds, chunk insertions,
deletions and duplications.
"""
from __future__ import annotations

import random
import struct
from pathlib import Path

import gguf_fixtures as fx

SEED = 0x6A5F  # fixed: the suite must be reproducible

INTERESTING = [0, 1, 2, 3, 4, 5, 7, 8, 12, 13, 16, 31, 32, 33, 63, 64, 100, 105, 106, 127, 128, 255, 256,
               0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1,
               (1 << 62), (1 << 63) - 1, 1 << 63, (1 << 64) - 1, (1 << 64) - 32]


def seed_files(folder: Path) -> list[Path]:
    """Several real (gguf-py written) small GGUFs plus a hand-made v2 file."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [
        fx.write_full(folder / "full.gguf"),
        fx.write_full(folder / "full_a256.gguf", alignment=256, seed=3),
        fx.write_vocab_like(folder / "vocab.gguf", n_tokens=64),
        fx.write_small_model(folder / "small.gguf"),
    ]
    v2 = fx.build(
        [fx.kv_str("general.architecture", "x"), fx.kv_u32("general.alignment", 16),
         fx.kv("n", 9, fx.array_payload(9, 2, fx.array_payload(4, 1, fx.u32(5)) + fx.array_payload(8, 1, fx.gstr("s"))))],
        [fx.tensor_info("a", [4], 0, 0), fx.tensor_info("b", [32, 2], 8, 16)],
        bytes(84), version=2, alignment=16)
    (folder / "v2.gguf").write_bytes(v2)
    paths.append(folder / "v2.gguf")
    return paths


def structural_fields(data: bytes) -> list[tuple[int, int]]:
    """(offset, width) of every count, length, type id, dim and offset in a valid file."""
    out = [(8, 8), (16, 8), (4, 4)]
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)

    def string(p: int) -> int:
        out.append((p, 8))
        return p + 8 + struct.unpack_from("<Q", data, p)[0]

    def value(p: int, t: int) -> int:
        sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
        if t in sizes:
            return p + sizes[t]
        if t == 8:
            return string(p)
        out.append((p, 4))
        out.append((p + 4, 8))
        et, n = struct.unpack_from("<IQ", data, p)
        p += 12
        for _ in range(n):
            p = value(p, et)
        return p

    for _ in range(n_kv):
        pos = string(pos)
        out.append((pos, 4))
        t = struct.unpack_from("<I", data, pos)[0]
        pos = value(pos + 4, t)
    for _ in range(n_tensors):
        pos = string(pos)
        out.append((pos, 4))
        nd = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        for _ in range(nd):
            out.append((pos, 8))
            pos += 8
        out.append((pos, 4))
        out.append((pos + 4, 8))
        pos += 12
    return out


def load_seeds(folder: Path) -> tuple[list[bytes], list[list[tuple[int, int]]]]:
    datas = [p.read_bytes() for p in seed_files(folder)]
    return datas, [structural_fields(d) for d in datas]


def mutate(seeds: list[bytes], fields: list[list[tuple[int, int]]], i: int) -> bytes:
    rng = random.Random((SEED << 32) ^ i)
    k = rng.randrange(len(seeds))
    data = bytearray(seeds[k])
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        op = rng.random()
        n = len(data)
        if n == 0:
            data += bytes(rng.randrange(64))
            continue
        if op < 0.35:  # interesting integer over a structural field, or near one
            off, width = rng.choice(fields[k])
            if rng.random() < 0.2:
                off += rng.choice((-1, 1, 2, 4))
            value = rng.choice(INTERESTING + [n, n - max(off, 0), rng.randrange(1 << 16)])
            if rng.random() < 0.3:
                value += rng.choice((-1, 1))
            value %= 1 << (8 * width)
            if 0 <= off and off + width <= n:
                data[off:off + width] = value.to_bytes(width, "little")
        elif op < 0.55:  # bit flips
            for _ in range(rng.randrange(1, 4)):
                p = rng.randrange(n)
                data[p] ^= 1 << rng.randrange(8)
        elif op < 0.65:  # random bytes
            for _ in range(rng.randrange(1, 8)):
                data[rng.randrange(n)] = rng.randrange(256)
        elif op < 0.75:  # truncation
            del data[rng.randrange(n):]
        elif op < 0.83:  # splice: this file's head with another seed's tail
            other = seeds[rng.randrange(len(seeds))]
            cut = rng.randrange(n)
            data = data[:cut] + other[rng.randrange(len(other)):]
        elif op < 0.90:  # insert random bytes
            p = rng.randrange(n)
            data[p:p] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        elif op < 0.95:  # delete a chunk
            p = rng.randrange(n)
            del data[p:p + rng.randrange(1, 32)]
        else:  # duplicate a chunk in place
            p = rng.randrange(n)
            chunk = data[p:p + rng.randrange(1, 64)]
            data[p:p] = chunk
    return bytes(data)
