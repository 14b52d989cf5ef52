"""The reader against llama.cpp's own GGUF parser (libggml-base from
llama-cpp-python, called through ctypes) on real fixture files and on mutants.

Known, intended differences (we are stricter, or support more):
- llama.cpp does not support arrays of arrays; we read them (gguf-py writes them);
- with no_alloc, llama.cpp does not check that tensor data lies inside the file;
  we do, so files it accepts can be rejected here for data past the end;
- llama.cpp requires tensors packed in order; we accept any aligned, non-overlapping layout;
- llama.cpp pads data_offset only when there are tensors (compared only then).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ds4kit import _engine
import gguf_fixtures as fx
import gguf_mutator
from gguf_llama_oracle import load_ggml_base, ours_as_llama_view, read_with_llama

pytestmark = pytest.mark.llama

LIB = load_ggml_base()
needs_llama = pytest.mark.skipif(LIB is None, reason="llama-cpp-python (libggml-base) not installed")


def _compare(f, data: bytes) -> bool:
    """True if llama.cpp read it and agrees; False if llama.cpp rejected it."""
    theirs = read_with_llama(LIB, data)
    if theirs is None:
        return False
    ours = ours_as_llama_view(f)
    if f.n_tensors == 0:
        ours.data_offset = theirs.data_offset
    assert ours == theirs
    return True


@needs_llama
def test_fixture_files_agree_with_llama_cpp(tmp_path):
    for path in (fx.write_vocab_like(tmp_path / "v.gguf", n_tokens=500), fx.write_small_model(tmp_path / "m.gguf")):
        f = _engine.GGUFFile(str(path))
        assert _compare(f, path.read_bytes()), f"llama.cpp rejected {path.name}"


@needs_llama
def test_type_table_file_agrees_with_llama_cpp(tmp_path):
    """Every standard ggml type id that this llama.cpp build knows: same byte sizes."""
    from gguf.constants import GGML_QUANT_SIZES
    infos, offset = [], 0
    for qt, (block, size) in GGML_QUANT_SIZES.items():
        size = 36 if qt.name == "Q8_1" else size  # see test_gguf_type_table.py
        infos.append(fx.tensor_info(f"t.{qt.name}", [2 * block, 3], int(qt), offset))
        offset += 6 * size + (-6 * size) % 32
    data = fx.build([fx.kv_str("general.architecture", "t")], infos, bytes(offset))
    path = tmp_path / "types.gguf"
    path.write_bytes(data)
    assert _compare(_engine.GGUFFile(str(path)), data), "llama.cpp rejected the type table file"


@needs_llama
def test_accepted_mutants_agree_with_llama_cpp(tmp_path):
    folder = tmp_path / "seeds"
    seeds, fields = gguf_mutator.load_seeds(folder)
    path = tmp_path / "m.gguf"
    agreed = 0
    for i in range(3000):
        data = gguf_mutator.mutate(seeds, fields, i)
        path.write_bytes(data)
        try:
            f = _engine.GGUFFile(str(path))
        except _engine.Ds4Error:
            continue
        try:
            agreed += _compare(f, data)
        except AssertionError as e:
            raise AssertionError(f"mutant {i} read differently by llama.cpp: {e}") from e
    assert agreed >= 50, agreed
