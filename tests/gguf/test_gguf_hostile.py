"""Broken and hostile GGUF files: each must raise the right ds4kit exception with a
message that names the file and the key or tensor at fault (never crash)."""
from __future__ import annotations

import pytest
from gguf import GGUFValueType as V

from ds4kit import _engine
import gguf_fixtures as fx
from gguf_fixtures import array_payload, build, f32_tensor_file, gstr, kv, kv_str, kv_u32, tensor_info, u32, u64

ARCH = kv_str("general.architecture", "test")
F32, Q8_0 = 0, 8
BIG = 1 << 62


def _case(id_, data, exc, *needles):
    return pytest.param(data, exc, needles, id=id_)


CASES = [
    # --- header
    _case("bad-magic", build([ARCH], [], magic=b"GGML"), _engine.FormatError, "bad magic 'GGML'"),
    _case("bad-magic-binary", b"\x00\xff\x10\x01" + bytes(40), _engine.FormatError, "bad magic '\\x00\\xff\\x10\\x01'"),
    _case("version-1", build([ARCH], [], version=1), _engine.UnsupportedError, "version 1 is not supported"),
    _case("version-4", build([ARCH], [], version=4), _engine.UnsupportedError, "unsupported GGUF version 4"),
    _case("big-endian", b"GGUF" + (3).to_bytes(4, "big") + bytes(16), _engine.UnsupportedError, "big-endian"),
    _case("truncated-header", b"GGUF\x03\x00\x00\x00\x01", _engine.FormatError, "truncated header"),
    _case("tiny-file", b"GG", _engine.FormatError, "truncated header", "2 bytes"),
    # --- counts and lengths that cannot fit in the file
    _case("absurd-n_kv", build([ARCH], [], n_kv=BIG), _engine.FormatError, "metadata count n_kv=" + str(BIG), "cannot fit"),
    _case("absurd-n_tensors", build([ARCH], [], n_tensors=BIG), _engine.FormatError, "tensor count n_tensors=" + str(BIG), "cannot fit"),
    _case("absurd-array-length", build([kv("tok.list", V.ARRAY, array_payload(V.STRING, BIG, gstr("a")))], []),
          _engine.FormatError, "'tok.list'", "array length " + str(BIG)),
    _case("absurd-u64-array-length", build([kv("a.u64", V.ARRAY, array_payload(V.UINT64, 1 << 61, u64(1)))], []),
          _engine.FormatError, "'a.u64'", "array length"),
    _case("absurd-key-length", build([u64(BIG) + b"abc"], []), _engine.FormatError, "metadata key #0", "truncated"),
    _case("absurd-string-length", build([kv("general.name", V.STRING, u64(BIG) + b"x")], []),
          _engine.FormatError, "'general.name'", "truncated"),
    # --- truncation in each section
    _case("truncated-kv-value", build([ARCH, kv("x.u64", V.UINT64, u64(7))], [], alignment=1)[:-3],
          _engine.FormatError, "'x.u64'", "truncated"),
    _case("truncated-tensor-info", build([ARCH], [tensor_info("blk.0.w", [32, 4], F32, 0)])[:-20],
          _engine.FormatError, "'blk.0.w'", "truncated"),
    _case("truncated-data", f32_tensor_file([("a", 0), ("tail.w", 32)], data_len=50),
          _engine.FormatError, "'tail.w'", "past the end of the file"),
    # --- metadata values
    _case("unknown-value-type", build([kv("k.weird", 13, u32(0))], []), _engine.FormatError, "'k.weird'", "unknown value type id 13"),
    _case("unknown-array-elem-type", build([kv("k.arr", V.ARRAY, array_payload(99, 1, u32(0)))], []),
          _engine.FormatError, "'k.arr'", "unknown element type id 99"),
    _case("bad-bool", build([kv("k.flag", V.BOOL, b"\x07")], []), _engine.FormatError, "'k.flag'", "bool value 7"),
    _case("bad-bool-in-array", build([kv("k.flags", V.ARRAY, array_payload(V.BOOL, 3, b"\x00\x01\x02"))], []),
          _engine.FormatError, "'k.flags'[2]", "bool value 2"),
    _case("deep-nesting", build([kv("k.deep", V.ARRAY, array_payload(V.ARRAY, 1, b"") * 9 + array_payload(V.INT32, 0, b""))], []),
          _engine.FormatError, "'k.deep'", "nested deeper"),
    _case("utf8-key", build([kv(b"gen\xffral.name", V.STRING, gstr("x"))], []),
          _engine.FormatError, "metadata key #0 'gen\\xffral.name'", "not valid UTF-8"),
    _case("utf8-value", build([ARCH, kv("general.name", V.STRING, gstr(b"ok\xc3("))], []),
          _engine.FormatError, "'general.name'", "not valid UTF-8"),
    _case("utf8-surrogate", build([kv("general.name", V.STRING, gstr(b"\xed\xa0\x80"))], []),
          _engine.FormatError, "'general.name'", "not valid UTF-8"),
    _case("utf8-in-string-array", build([kv("tokenizer.ggml.tokens", V.ARRAY,
                                            array_payload(V.STRING, 3, gstr("a") + gstr("b") + gstr(b"\x80")))], []),
          _engine.FormatError, "'tokenizer.ggml.tokens'[2]", "not valid UTF-8"),
    _case("empty-key", build([kv("", V.UINT8, b"\x01")], []), _engine.FormatError, "metadata key #0 is empty"),
    _case("duplicate-key", build([ARCH, kv_u32("dup.key", 1), kv_u32("dup.key", 2)], []),
          _engine.FormatError, "duplicate metadata key 'dup.key'"),
    # --- alignment
    _case("alignment-zero", build([kv_u32("general.alignment", 0)], []), _engine.FormatError, "'general.alignment'", "power of two"),
    _case("alignment-not-pow2", build([kv_u32("general.alignment", 48)], []), _engine.FormatError, "'general.alignment'", "48"),
    _case("alignment-wrong-type", build([kv_str("general.alignment", "32")], []),
          _engine.FormatError, "'general.alignment'", "expected UINT32, found STRING"),
    # --- tensor table
    _case("duplicate-tensor", f32_tensor_file([("same.w", 0), ("same.w", 32)]), _engine.FormatError, "duplicate tensor name 'same.w'"),
    _case("n_dims-0", build([ARCH], [tensor_info("zero.d", [], F32, 0)], bytes(64)), _engine.FormatError, "'zero.d'", "n_dims 0"),
    _case("n_dims-5", build([ARCH], [tensor_info("five.d", [1, 1, 1, 1, 1], F32, 0)], bytes(64)),
          _engine.FormatError, "'five.d'", "n_dims 5"),
    _case("zero-dim", build([ARCH], [tensor_info("empty.t", [32, 0], F32, 0)], bytes(64)),
          _engine.FormatError, "'empty.t'", "dimension 1 is 0"),
    _case("element-overflow", build([ARCH], [tensor_info("huge.t", [1 << 32, 1 << 32], F32, 0)], bytes(64)),
          _engine.FormatError, "'huge.t'", "element count overflows"),
    _case("byte-size-overflow", build([ARCH], [tensor_info("huge.t", [1 << 62, 1], 27, 0)], bytes(64)),
          _engine.FormatError, "'huge.t'", "overflows"),
    _case("unknown-type", build([ARCH], [tensor_info("blk.3.odd", [32], 77, 0)], bytes(64)),
          _engine.UnsupportedError, "'blk.3.odd'", "unknown tensor type id 77"),
    _case("rocmfp-105", build([ARCH], [tensor_info("blk.7.ffn_down.weight", [32], 105, 0)], bytes(64)),
          _engine.UnsupportedError, "'blk.7.ffn_down.weight'", "105", "ROCmFP"),
    _case("not-whole-blocks", build([ARCH], [tensor_info("q.w", [40, 2], Q8_0, 0)], bytes(128)),
          _engine.FormatError, "'q.w'", "40", "Q8_0 block size 32"),
    _case("utf8-tensor-name", build([ARCH], [tensor_info(b"blk.\xfe", [8], F32, 0)], bytes(64)),
          _engine.FormatError, "tensor #0 name 'blk.\\xfe'", "not valid UTF-8"),
    _case("misaligned-offset", f32_tensor_file([("a", 0), ("odd.w", 40)]), _engine.FormatError,
          "'odd.w'", "offset 40", "alignment 32"),
    _case("offset-past-end", build([ARCH], [tensor_info("far.w", [8], F32, 1 << 40)], bytes(64)),
          _engine.FormatError, "'far.w'", "past the end of the file"),
    _case("offset-overflow", build([ARCH], [tensor_info("wrap.w", [8], F32, (1 << 64) - 32)], bytes(64)),
          _engine.FormatError, "'wrap.w'", "past the end of the file"),
    _case("overlap", f32_tensor_file([("first.w", 0), ("second.w", 32), ("third.w", 64)], n=16),
          _engine.FormatError, "'first.w' [0, 64)", "'second.w' [32, 96)", "overlap"),
    _case("overlap-same-offset", f32_tensor_file([("x.w", 64), ("y.w", 64)]), _engine.FormatError, "'x.w'", "'y.w'", "overlap"),
]


@pytest.mark.parametrize("data,exc,needles", CASES)
def test_hostile_file_raises_naming_culprit(tmp_path, data, exc, needles):
    path = tmp_path / "hostile.gguf"
    path.write_bytes(data)
    with pytest.raises(exc) as e:
        _engine.GGUFFile(str(path))
    assert type(e.value) is exc  # the exact class, not just a Ds4Error
    msg = str(e.value)
    assert msg.startswith(str(path) + ": "), msg
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"


def test_every_prefix_of_a_valid_file_is_rejected(tmp_path):
    """Truncation anywhere (header, KV, infos, padding, data) gives FormatError, never a crash."""
    data = fx.build(
        [ARCH, kv("a.strs", V.ARRAY, array_payload(V.STRING, 2, gstr("xy") + gstr("é"))),
         kv("a.nested", V.ARRAY, array_payload(V.ARRAY, 1, array_payload(V.UINT16, 2, b"\x01\x00\x02\x00")))],
        [fx.tensor_info("t.a", [8], F32, 0), fx.tensor_info("t.b", [32], Q8_0, 32)],
        bytes(32 + 34))
    path = tmp_path / "cut.gguf"
    path.write_bytes(data)
    assert _engine.GGUFFile(str(path)).n_tensors == 2
    for n in range(len(data)):
        path.write_bytes(data[:n])
        with pytest.raises(_engine.FormatError) as e:
            _engine.GGUFFile(str(path))
        assert "truncated" in str(e.value) or "past the end" in str(e.value), (n, str(e.value))


def test_empty_file(tmp_path):
    path = tmp_path / "empty.gguf"
    path.write_bytes(b"")
    with pytest.raises(_engine.FormatError, match="truncated header: file has 0 bytes"):
        _engine.GGUFFile(str(path))


def test_missing_path_and_directory(tmp_path):
    with pytest.raises(_engine.ArgumentError, match="cannot open"):
        _engine.GGUFFile(str(tmp_path / "nope.gguf"))
    with pytest.raises(_engine.ArgumentError, match="not a regular file"):
        _engine.GGUFFile(str(tmp_path))


def test_long_binary_key_is_quoted_and_cut(tmp_path):
    """A hostile key in a message is escaped and shortened, so the message is valid text."""
    key = b"\x01" * 5000
    path = tmp_path / "k.gguf"
    path.write_bytes(build([kv(key, V.UINT8, b"\x01"), kv(key, V.UINT8, b"\x01")], []))
    with pytest.raises(_engine.FormatError) as e:
        _engine.GGUFFile(str(path))
    msg = str(e.value)
    assert "duplicate metadata key '\\x01\\x01" in msg and "(5000 bytes)" in msg and len(msg) < 1000
