"""ds4kit._engine.GGUFFile against gguf-py's GGUFReader (the independent oracle) on
files written by gguf-py's GGUFWriter, plus a version-2 file built byte by byte."""
from __future__ import annotations

import gc
import struct

import numpy as np
import pytest
import gguf
from gguf import GGUFValueType as V

from ds4kit import _engine
import gguf_fixtures as fx
from gguf_oracle import assert_matches_gguf_py


@pytest.fixture(scope="module", params=[None, 64, 1024], ids=["align-default", "align-64", "align-1024"])
def full_file(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("full") / "full.gguf"
    return fx.write_full(path, alignment=request.param, n_extra_tensors=20)


def test_header_matches_oracle(full_file):
    f = _engine.GGUFFile(str(full_file))
    r = gguf.GGUFReader(str(full_file))
    assert f.path == str(full_file)
    assert f.version == 3
    assert f.alignment == r.alignment
    assert f.data_offset == r.data_offset
    assert f.file_size == full_file.stat().st_size
    assert f.n_tensors == len(r.tensors) == 31


def test_everything_matches_oracle(full_file):
    f = assert_matches_gguf_py(full_file)
    assert len(f.metadata) == 2 + len(fx.SCALARS) + len(fx.ARRAYS) + 2 - (f.alignment == 32)


def test_metadata_values_as_written(full_file):
    """Same values against what we asked GGUFWriter to write (catches a shared misreading)."""
    md = _engine.GGUFFile(str(full_file)).metadata
    for key, vt, val in fx.SCALARS:
        if vt == V.FLOAT32:
            assert md[key] == float(np.float32(val))
        else:
            assert md[key] == val and type(md[key]) is type(val), key
    for key, vt, val in fx.ARRAYS:
        got = md[key]
        if vt == V.STRING:
            assert got == val
        else:
            assert got.dtype == fx.NP_DTYPES[vt]
            assert got.tolist() == np.array(val, dtype=fx.NP_DTYPES[vt]).tolist(), key
    nested = md[fx.NESTED[0]]
    assert [a.tolist() for a in nested] == fx.NESTED[1]
    assert md[fx.NESTED_STR[0]] == fx.NESTED_STR[1]


def test_tensor_views_are_typed_right(full_file):
    f = _engine.GGUFFile(str(full_file))
    for t in f.tensors:
        data = f.tensor_data(t.name)
        assert data.dtype == np.uint8 and data.shape == (t.nbytes,) and t.offset % f.alignment == 0
        assert f.tensor(t.name).abs_offset == t.abs_offset == f.data_offset + t.offset


def test_tensor_values_decode(full_file):
    """F32 bytes read through our view decode to the array that was written."""
    f = _engine.GGUFFile(str(full_file))
    rng = np.random.default_rng(0)
    expected = fx.tensor_set(rng)[0][1]
    got = f.tensor_data("token_embd.weight").view(np.float32).reshape(expected.shape)
    np.testing.assert_array_equal(got, expected)


def test_typed_getters(full_file):
    f = _engine.GGUFFile(str(full_file))
    assert f.get_u32("t.u32") == 4294967295
    assert f.get_u32("t.u16") == 65535          # lossless widening
    assert f.get_u64("t.u64") == 18446744073709551615
    assert f.get_i32("t.i16") == -32768
    assert f.get_i32("t.u16") == 65535
    assert f.get_i64("t.i64") == -9223372036854775808
    assert f.get_i64("t.u32") == 4294967295
    assert f.get_f32("t.f32") == pytest.approx(0.1, rel=1e-7)
    assert f.get_f64("t.f64") == 0.1
    assert f.get_f64("t.f32") == float(np.float32(0.1))
    assert f.get_bool("t.bool_true") is True
    assert f.get_string("t.str") == "héllo wörld ✓ 𝄞"
    assert f.get_u32_array("a.u16") == [0, 65535]
    assert f.get_i32_array("a.i32") == [-2147483648, -1, 2147483647]
    assert f.get_i64_array("a.u32") == [0, 7, 4294967295]
    assert f.get_f32_array("a.f32") == pytest.approx([0.5, -1.25, 3.0e38])
    assert f.get_string_array("a.str") == fx.ARRAYS[-1][2]


@pytest.mark.parametrize("getter,key,expected,actual", [
    ("get_u32", "t.u64", "UINT32", "UINT64"),     # narrowing is refused
    ("get_u32", "t.i8", "UINT32", "INT8"),        # sign change is refused
    ("get_i32", "t.u32", "INT32", "UINT32"),
    ("get_u64", "t.i64", "UINT64", "INT64"),
    ("get_f32", "t.f64", "FLOAT32", "FLOAT64"),
    ("get_string", "t.u8", "STRING", "UINT8"),
    ("get_bool", "t.u8", "BOOL", "UINT8"),
    ("get_u32", "a.u32", "UINT32", "ARRAY[UINT32]"),
    ("get_i32_array", "a.u32", "ARRAY[INT32]", "ARRAY[UINT32]"),
    ("get_string_array", "a.nested_str", "ARRAY[STRING]", "ARRAY[ARRAY[STRING]]"),
    ("get_f32_array", "a.f64", "ARRAY[FLOAT32]", "ARRAY[FLOAT64]"),
])
def test_getter_type_errors_name_key_and_types(full_file, getter, key, expected, actual):
    f = _engine.GGUFFile(str(full_file))
    with pytest.raises(_engine.FormatError) as e:
        getattr(f, getter)(key)
    msg = str(e.value)
    assert f"'{key}'" in msg and f"expected {expected}" in msg and f"found {actual}" in msg
    assert str(full_file) in msg


def test_missing_key_and_tensor(full_file):
    f = _engine.GGUFFile(str(full_file))
    with pytest.raises(_engine.FormatError, match="'no.such.key' not found"):
        f.get_u32("no.such.key")
    with pytest.raises(_engine.ArgumentError, match="no tensor named 'nope'"):
        f.tensor("nope")
    with pytest.raises(_engine.ArgumentError, match="no tensor named 'nope'"):
        f.tensor_data("nope")


def test_vocab_and_small_model_files(tmp_path):
    for path in (fx.write_vocab_like(tmp_path / "v.gguf"), fx.write_small_model(tmp_path / "m.gguf")):
        assert_matches_gguf_py(path)


def test_zero_copy_view_outlives_file(tmp_path):
    path = fx.write_small_model(tmp_path / "m.gguf")
    f = _engine.GGUFFile(str(path))
    t = f.tensor("output_norm.weight")
    view = f.tensor_data(t.name)
    again = f.tensor_data(t.name)
    # Zero-copy: both views share one address, and it is the mapping's address
    # of the tensor: its distance from another tensor's view equals the offset gap.
    other = f.tensor_data("output.weight")
    addr = view.__array_interface__["data"][0]
    assert again.__array_interface__["data"][0] == addr
    assert other.__array_interface__["data"][0] - addr == f.tensor("output.weight").offset - t.offset
    assert not view.flags.writeable and not view.flags.owndata
    with pytest.raises(ValueError):
        view[0] = 1  # the mapping is read-only; numpy must refuse, not segfault
    expected = path.read_bytes()[t.abs_offset:t.abs_offset + t.nbytes]
    del f
    gc.collect()
    assert view.tobytes() == expected  # still mapped after the GGUFFile is gone


def _v2_file() -> bytes:
    """A version-2 file written byte by byte (GGUFWriter only writes v3)."""
    kvs = [
        fx.kv_str("general.architecture", "llama"),
        fx.kv_u32("general.alignment", 16),
        fx.kv("v2.empty", V.ARRAY, fx.array_payload(V.INT32, 0, b"")),
        fx.kv("v2.f64", V.FLOAT64, struct.pack("<d", -0.25)),
        fx.kv("v2.nested_mixed", V.ARRAY, fx.array_payload(V.ARRAY, 2,
              fx.array_payload(V.UINT8, 2, b"\x01\x02") + fx.array_payload(V.STRING, 1, fx.gstr("s")))),
    ]
    infos = [fx.tensor_info("a", [4], 0, 0), fx.tensor_info("b", [32, 2], 8, 16)]
    data = struct.pack("<4f", 1, 2, 3, 4) + bytes(68)
    return fx.build(kvs, infos, data, version=2, alignment=16)


def test_handcrafted_v2(tmp_path):
    path = tmp_path / "v2.gguf"
    path.write_bytes(_v2_file())
    f = _engine.GGUFFile(str(path))
    assert f.version == 2 and f.alignment == 16
    md = f.metadata
    assert md["v2.empty"].tolist() == [] and f.metadata_type("v2.empty") == "ARRAY[INT32]"
    assert md["v2.f64"] == -0.25
    assert md["v2.nested_mixed"][0].tolist() == [1, 2] and md["v2.nested_mixed"][1] == ["s"]
    assert f.metadata_type("v2.nested_mixed") == "ARRAY[ARRAY[MIXED]]"
    a, b = f.tensors
    assert (a.name, a.type_name, a.shape, a.nbytes, a.offset) == ("a", "F32", (4,), 16, 0)
    assert (b.name, b.type_name, b.shape, b.n_elements, b.nbytes, b.offset) == ("b", "Q8_0", (32, 2), 64, 68, 16)
    assert f.tensor_data("a").view(np.float32).tolist() == [1, 2, 3, 4]
    assert_matches_gguf_py(path)  # gguf-py reads v2 too


def test_file_with_no_tensors_and_no_kv(tmp_path):
    path = tmp_path / "empty.gguf"
    path.write_bytes(fx.build([], []))
    f = _engine.GGUFFile(str(path))
    assert f.n_tensors == 0 and f.metadata == {} and f.alignment == 32
