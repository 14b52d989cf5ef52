"""GGUF files for the reader tests.

Two sources: gguf-py's GGUFWriter (the reference writer, for realistic files) and
GGUFBytes, a byte-by-byte builder for what GGUFWriter will not write: version 2,
empty or nested arrays, and every kind of broken or hostile file.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

# One key per scalar type, with values at the edges of each range.
SCALARS = [
    ("t.u8", V.UINT8, 255),
    ("t.i8", V.INT8, -128),
    ("t.u16", V.UINT16, 65535),
    ("t.i16", V.INT16, -32768),
    ("t.u32", V.UINT32, 4294967295),
    ("t.i32", V.INT32, -2147483648),
    ("t.u64", V.UINT64, 18446744073709551615),
    ("t.i64", V.INT64, -9223372036854775808),
    ("t.f32", V.FLOAT32, 0.1),  # not exact in float32: checks FLOAT32 is read as float32
    ("t.f64", V.FLOAT64, 0.1),
    ("t.bool_true", V.BOOL, True),
    ("t.bool_false", V.BOOL, False),
    ("t.str", V.STRING, "héllo wörld ✓ 𝄞"),
    ("t.str_empty", V.STRING, ""),
]

# One array key per element type.
ARRAYS = [
    ("a.u8", V.UINT8, [0, 1, 255]),
    ("a.i8", V.INT8, [-128, 0, 127]),
    ("a.u16", V.UINT16, [0, 65535]),
    ("a.i16", V.INT16, [-32768, 32767]),
    ("a.u32", V.UINT32, [0, 7, 4294967295]),
    ("a.i32", V.INT32, [-2147483648, -1, 2147483647]),
    ("a.u64", V.UINT64, [0, 18446744073709551615]),
    ("a.i64", V.INT64, [-9223372036854775808, 9223372036854775807]),
    ("a.f32", V.FLOAT32, [0.5, -1.25, 3.0e38]),
    ("a.f64", V.FLOAT64, [0.1, -2.5e300]),
    ("a.bool", V.BOOL, [True, False, True]),
    ("a.str", V.STRING, ["a", "", "ünïcödé", "<0x0A>", "x" * 300]),
]

NESTED = ("a.nested", [[1, 2], [3, 4, 5], [6]])
NESTED_STR = ("a.nested_str", [["x", "yy"], ["zzz"]])

NP_DTYPES = {
    V.UINT8: np.uint8, V.INT8: np.int8, V.UINT16: np.uint16, V.INT16: np.int16,
    V.UINT32: np.uint32, V.INT32: np.int32, V.UINT64: np.uint64, V.INT64: np.int64,
    V.FLOAT32: np.float32, V.FLOAT64: np.float64, V.BOOL: np.bool_,
}


def _finish(w: gguf.GGUFWriter) -> None:
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tensor_set(rng: np.random.Generator) -> list[tuple[str, np.ndarray, Q]]:
    """Tensors of several types and ranks; quantised ones via gguf.quants."""
    out = [
        ("token_embd.weight", rng.standard_normal((5, 64)).astype(np.float32), Q.F32),
        ("blk.0.attn_norm.weight", rng.standard_normal(64).astype(np.float32), Q.F32),
        ("blk.0.ffn_up.weight", rng.standard_normal((3, 4, 64)).astype(np.float16), Q.F16),
        ("blk.0.ffn_gate.weight", rng.standard_normal((2, 3, 2, 32)).astype(np.float32), Q.F32),
        ("blk.0.ids", rng.integers(-100, 100, size=(7, 3)).astype(np.int32), Q.I32),
    ]
    for name, qt, shape in [("blk.0.attn_q.weight", Q.Q8_0, (6, 64)),
                            ("blk.0.attn_k.weight", Q.Q4_0, (4, 96)),
                            ("blk.0.attn_v.weight", Q.BF16, (3, 40))]:
        data = rng.standard_normal(shape).astype(np.float32)
        out.append((name, gguf.quants.quantize(data, qt), qt))
    # gguf-py cannot quantise K-quants; the reader only sizes them, so random blocks do.
    for name, qt, shape in [("blk.1.ffn_down.weight", Q.Q4_K, (2, 256)),
                            ("blk.1.ffn_up.weight", Q.Q2_K, (2, 512)),
                            ("blk.1.ffn_gate.weight", Q.IQ2_XXS, (1, 256))]:
        block, size = gguf.GGML_QUANT_SIZES[qt]
        raw = rng.integers(0, 256, size=(shape[0], shape[1] // block * size), dtype=np.uint8)
        out.append((name, raw, qt))
    return out


def write_full(path: Path, alignment: int | None = None, seed: int = 0, n_extra_tensors: int = 0) -> Path:
    """Every metadata value type, arrays, nested arrays and tensors of several types."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "testarch")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for key, vt, val in SCALARS:
        w.add_key_value(key, val, vt)
    for key, vt, val in ARRAYS:
        w.add_key_value(key, val, V.ARRAY, sub_type=vt)
    w.add_array(*NESTED)
    w.add_array(*NESTED_STR)
    for name, data, qt in tensor_set(rng):
        w.add_tensor(name, data, raw_dtype=qt if qt not in (Q.F32, Q.F16, Q.I32) else None)
    for k in range(n_extra_tensors):
        w.add_tensor(f"extra.{k}.weight", rng.standard_normal((k % 3 + 1, 32)).astype(np.float32))
    _finish(w)
    return path


def write_vocab_like(path: Path, n_tokens: int = 300, seed: int = 1) -> Path:
    """Shaped like a tokenizer-only GGUF: long string/float/int arrays, no tensors."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_token_list([f"tok{i}_" + "é" * (i % 4) for i in range(n_tokens)])
    w.add_token_scores(rng.standard_normal(n_tokens).astype(np.float32).tolist())
    w.add_token_types([int(x) for x in rng.integers(1, 6, n_tokens)])
    w.add_token_merges([f"a{i} b{i}" for i in range(n_tokens // 2)])
    w.add_bos_token_id(1)
    w.add_add_bos_token(True)
    _finish(w)
    return path


def write_small_model(path: Path, seed: int = 2) -> Path:
    """A few tensors with little metadata, at a non-default alignment."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "deepseek4")
    w.add_custom_alignment(64)
    w.add_uint32("deepseek4.block_count", 2)
    w.add_float32("deepseek4.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_tensor("output_norm.weight", rng.standard_normal(32).astype(np.float32))
    q = gguf.quants.quantize(rng.standard_normal((2, 32)).astype(np.float32), Q.Q8_0)
    w.add_tensor("output.weight", q, raw_dtype=Q.Q8_0)
    w.add_tensor("blk.0.attn_norm.weight", rng.standard_normal(32).astype(np.float16))
    _finish(w)
    return path


# --- byte-level builder --------------------------------------------------------------------

def u32(x: int) -> bytes:
    return struct.pack("<I", x)


def u64(x: int) -> bytes:
    return struct.pack("<Q", x)


def gstr(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return u64(len(b)) + b


def kv(key: str | bytes, vtype: int, payload: bytes) -> bytes:
    """One metadata entry: key, value type id, already-encoded value."""
    return gstr(key) + u32(vtype) + payload


def kv_u32(key: str, x: int) -> bytes:
    return kv(key, V.UINT32, u32(x))


def kv_str(key: str, s: str | bytes) -> bytes:
    return kv(key, V.STRING, gstr(s))


def array_payload(elem_type: int, count: int, body: bytes) -> bytes:
    return u32(elem_type) + u64(count) + body


def tensor_info(name: str | bytes, ne: list[int], type_id: int, offset: int) -> bytes:
    return gstr(name) + u32(len(ne)) + b"".join(u64(d) for d in ne) + u32(type_id) + u64(offset)


def build(kvs: list[bytes], infos: list[bytes], data: bytes = b"", version: int = 3,
          alignment: int = 32, n_kv: int | None = None, n_tensors: int | None = None,
          magic: bytes = b"GGUF") -> bytes:
    """A whole file: header, metadata, tensor infos, padding to `alignment`, data."""
    head = magic + u32(version) + u64(len(infos) if n_tensors is None else n_tensors)
    head += u64(len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs) + b"".join(infos)
    pad = (-len(body)) % alignment
    return body + b"\0" * pad + data


def f32_tensor_file(names_offsets: list[tuple[str, int]], n: int = 8, data_len: int | None = None,
                    extra_kvs: list[bytes] | None = None, alignment: int = 32) -> bytes:
    """F32 vectors of n elements at the given relative offsets; data sized to fit them all."""
    infos = [tensor_info(nm, [n], Q.F32, off) for nm, off in names_offsets]
    end = max((off + 4 * n for _, off in names_offsets), default=0)
    data = bytes(range(256)) * (end // 256 + 1)
    kvs = [kv_str("general.architecture", "test")] + (extra_kvs or [])
    if alignment != 32:
        kvs.append(kv_u32("general.alignment", alignment))
    return build(kvs, infos, data[: end if data_len is None else data_len], alignment=alignment)
