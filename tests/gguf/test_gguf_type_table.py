"""The engine's tensor type table (engine/src/quant/quant_types.cpp), seen through
the GGUF reader, against gguf-py's GGML_QUANT_SIZES for every standard ggml id."""
from __future__ import annotations

import pytest
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as Q

from ds4kit import _engine
import gguf_fixtures as fx

# gguf-py still lists Q8_1 with fp32 d and s (4 + 4 + 32 = 40 bytes); ggml's
# block_q8_1 has two fp16 (2 + 2 + 32 = 36, static_assert in ggml-common.h).
# Q8_1 is only an activation type, but our table follows ggml.
GGML_OVERRIDES = {Q.Q8_1: (32, 36)}
# Lucebox ROCmFP types, bytes per 32-element block (ds4-model.md section 5).
ROCMFP = {100: ("Q4_0_ROCMFP4", 18), 101: ("Q4_0_ROCMFP4_FAST", 17), 102: ("Q6_0_ROCMFPX", 26),
          103: ("Q8_0_ROCMFPX", 33), 104: ("Q3_0_ROCMFPX", 14), 107: ("Q2_0_ROCMFP2", 10)}


def expected_table() -> dict[int, tuple[str, int, int]]:
    out = {}
    for qt, (block, size) in GGML_QUANT_SIZES.items():
        block, size = GGML_OVERRIDES.get(qt, (block, size))
        out[int(qt)] = (qt.name, block, size)
    for id_, (name, size) in ROCMFP.items():
        out[id_] = (name, 32, size)
    return out


def test_gguf_py_still_disagrees_on_q8_1():
    """If gguf-py ever fixes Q8_1 this fails, and the override above should go."""
    assert GGML_QUANT_SIZES[Q.Q8_1] == (32, 40)


def test_every_type_sized_like_the_reference(tmp_path):
    table = expected_table()
    infos, data, offset = [], b"", 0
    for id_, (name, block, size) in table.items():
        nbytes = 2 * size * 3  # ne = [2 blocks, 3 rows]
        infos.append(fx.tensor_info(f"t.{name}", [2 * block, 3], id_, offset))
        offset += nbytes + (-nbytes) % 32
    data = bytes(offset)
    path = tmp_path / "types.gguf"
    path.write_bytes(fx.build([fx.kv_str("general.architecture", "t")], infos, data))
    f = _engine.GGUFFile(str(path))
    assert f.n_tensors == len(table)
    for t, (id_, (name, block, size)) in zip(f.tensors, table.items()):
        assert (t.type_id, t.type_name) == (id_, name)
        assert t.n_elements == 2 * block * 3
        assert t.nbytes == 2 * size * 3, name


@pytest.mark.parametrize("id_", [i for i in range(0, 128) if i not in expected_table()])
def test_ids_outside_the_table_are_unsupported(tmp_path, id_):
    path = tmp_path / "u.gguf"
    path.write_bytes(fx.build([], [fx.tensor_info("blk.0.x", [256], id_, 0)], bytes(1024)))
    with pytest.raises(_engine.UnsupportedError, match=rf"'blk\.0\.x': unknown tensor type id {id_}\b"):
        _engine.GGUFFile(str(path))
