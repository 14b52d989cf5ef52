"""load_weights: hparams from the file's keys, tensors dequantised to float64."""
import gguf
import numpy as np
import pytest

from ds4_ref_gguf_writer import write_gguf
from ds4_ref_tiny import tiny_weights
from ds4_ref_weights import ReferenceFormatError, load_weights

Q = gguf.GGMLQuantizationType


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    w = tiny_weights(seed=3)
    qtypes = {"blk.0.attn_q_a.weight": Q.Q8_0, "blk.1.ffn_gate_exps.weight": Q.Q8_0,
              "output.weight": Q.F16, "blk.1.attn_kv.weight": Q.F16}
    path = tmp_path_factory.mktemp("ref_weights") / "tiny.gguf"
    write_gguf(w, path, qtypes)
    return w, load_weights(path)


def test_hparams_come_from_the_file(written):
    w, back = written
    for name, want in vars(w.hp).items():
        got = getattr(back.hp, name)
        if isinstance(want, float):
            assert got == pytest.approx(want, rel=1e-6), name      # stored as float32
        else:
            assert got == want, name


def test_tensors_keep_names_shapes_and_values(written):
    w, back = written
    assert set(back.tensors) == set(w.tensors)
    for name, arr in w.tensors.items():
        got = back[name]
        assert got.shape == arr.shape, name
        assert got.dtype in (np.float64, np.int64), name
        if name in ("blk.0.attn_q_a.weight", "blk.1.ffn_gate_exps.weight"):
            # Q8_0: one scale d = amax/127 per 32 values; error <= d/2 from rounding to an
            # integer plus 127 * d * 2^-11 from storing d as f16: <= 0.5625 d.
            blocks = arr.reshape(-1, 32)
            bound = np.abs(blocks).max(axis=1, keepdims=True) / 127 * 0.5625
            assert np.all(np.abs(got.reshape(-1, 32) - blocks) <= bound + 1e-6), name
        elif name in ("output.weight", "blk.1.attn_kv.weight"):
            np.testing.assert_array_equal(got, arr.astype(np.float16).astype(np.float64))
        else:
            want = arr.astype(np.float32).astype(np.float64) if arr.dtype.kind == "f" else arr
            np.testing.assert_array_equal(got, want)


def _minimal_gguf(path, arch="deepseek4", keys=None):
    wr = gguf.GGUFWriter(str(path), arch)
    for k, v in (keys or {}).items():
        wr.add_uint32(k, v)
    wr.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def test_errors_name_what_is_wrong(tmp_path):
    p = tmp_path / "llama.gguf"
    _minimal_gguf(p, arch="llama")
    with pytest.raises(ReferenceFormatError, match="general.architecture is 'llama'"):
        load_weights(p)
    p = tmp_path / "nokeys.gguf"
    _minimal_gguf(p, keys={"deepseek4.block_count": 2, "deepseek4.vocab_size": 4})
    with pytest.raises(ReferenceFormatError, match="deepseek4.attention.key_length"):
        load_weights(p)
    p = tmp_path / "garbage.gguf"
    p.write_bytes(b"not a gguf at all")
    with pytest.raises(ReferenceFormatError, match="garbage.gguf"):
        load_weights(p)


def test_missing_tensor_is_named():
    w = tiny_weights(seed=4)
    with pytest.raises(ReferenceFormatError, match="blk.9.attn_norm.weight"):
        w["blk.9.attn_norm.weight"]
