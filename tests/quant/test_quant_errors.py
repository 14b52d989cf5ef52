"""Bad input to the quant bindings: clear errors naming the tensor and type id,
never a crash. Also the type table as seen from Python."""
import gguf
import numpy as np
import pytest

from ds4kit import _engine

KERNEL_IDS = {0, 1, 30, 8, 2, 12, 10, 16, 39, 100, 101, 102, 103, 104, 107}


def test_unknown_type_id_names_tensor_and_id():
    raw = np.zeros(18, dtype=np.uint8)
    with pytest.raises(_engine.UnsupportedError, match=r"blk\.3\.ffn_up_exps\.weight.*\b105\b"):
        _engine.dequantize(105, raw, 32, name="blk.3.ffn_up_exps.weight")
    with pytest.raises(_engine.UnsupportedError, match=r"blk\.0\.attn_q\.weight.*\b4242\b"):
        _engine.dot_row(4242, raw, np.zeros(32, np.float32), name="blk.0.attn_q.weight")
    with pytest.raises(_engine.UnsupportedError, match=r"output\.weight.*\b106\b"):
        _engine.dot_row_cols(106, raw, np.zeros((2, 32), np.float32), name="output.weight")


def test_unsupported_error_is_an_engine_error():
    with pytest.raises(_engine.Ds4Error):
        _engine.dequantize(200, np.zeros(4, np.uint8), 1, name="t")


def test_known_type_without_kernel_is_unsupported():
    raw = np.zeros(176, dtype=np.uint8)  # one Q5_K block
    with pytest.raises(_engine.UnsupportedError, match=r"tok_embd\.weight.*Q5_K.*\b13\b"):
        _engine.dequantize(13, raw, 256, name="tok_embd.weight")


def test_wrong_buffer_length_names_tensor():
    with pytest.raises(_engine.ArgumentError, match=r"blk\.1\.ffn_down\.weight.*33 bytes.*34"):
        _engine.dequantize(8, np.zeros(33, np.uint8), 32, name="blk.1.ffn_down.weight")
    with pytest.raises(_engine.ArgumentError, match=r"'w'.*Q4_0"):
        _engine.dot_row(2, np.zeros(18, np.uint8), np.zeros(64, np.float32), name="w")
    with pytest.raises(_engine.ArgumentError, match=r"'w'"):
        _engine.dot_row_cols(2, np.zeros(36, np.uint8), np.zeros((3, 32), np.float32), name="w")
    with pytest.raises(_engine.ArgumentError, match=r"'m'"):
        _engine.matvec(8, np.zeros(34 * 3, np.uint8), np.zeros(32, np.float32), 2, name="m")


def test_partial_block_names_tensor():
    with pytest.raises(_engine.ArgumentError, match=r"'x\.w'.*33 elements.*Q8_0"):
        _engine.dequantize(8, np.zeros(34, np.uint8), 33, name="x.w")
    with pytest.raises(_engine.ArgumentError, match=r"'x\.w'.*Q4_K"):
        _engine.dot_row(12, np.zeros(144, np.uint8), np.zeros(255, np.float32), name="x.w")


def test_bad_shapes():
    with pytest.raises(_engine.ArgumentError, match="1-D"):
        _engine.dot_row(0, np.zeros(16, np.uint8), np.zeros((2, 2), np.float32), name="t")
    with pytest.raises(_engine.ArgumentError, match="2-D"):
        _engine.dot_row_cols(0, np.zeros(16, np.uint8), np.zeros(4, np.float32), name="t")
    with pytest.raises(_engine.ArgumentError, match="element"):
        _engine.dequantize(0, np.zeros(0, np.uint8), -1, name="t")


def test_unnamed_tensor_is_still_labelled():
    with pytest.raises(_engine.UnsupportedError, match=r"<unnamed>.*105"):
        _engine.dequantize(105, np.zeros(4, np.uint8), 1)


def test_empty_rows_are_fine():
    assert _engine.dequantize(8, np.zeros(0, np.uint8), 0).shape == (0,)
    assert _engine.dot_row(0, np.zeros(0, np.uint8), np.zeros(0, np.float32)) == 0.0
    assert _engine.dot_row_cols(8, np.zeros(0, np.uint8), np.zeros((3, 0), np.float32)).tolist() == [0, 0, 0]


def test_qtype_table_matches_gguf_sizes():
    table = {t["id"]: t for t in _engine.qtypes()}
    assert {i for i, t in table.items() if t["kernels"]} == KERNEL_IDS
    for qtype, (block, size) in gguf.GGML_QUANT_SIZES.items():
        if int(qtype) in KERNEL_IDS:
            assert (table[int(qtype)]["block_size"], table[int(qtype)]["type_size"]) == (block, size), qtype.name
            assert table[int(qtype)]["name"] == qtype.name
    info = _engine.qtype_info(103)
    assert info == {"id": 103, "name": "Q8_0_ROCMFPX", "block_size": 32, "type_size": 33, "kernels": True}
    with pytest.raises(_engine.UnsupportedError, match=r"\b105\b"):
        _engine.qtype_info(105)
