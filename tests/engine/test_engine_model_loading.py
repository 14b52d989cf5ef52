"""Hyperparameters and tensor views: values against gguf-py's reading (the reference's
read_hparams), and clear errors for missing keys, missing tensors and wrong shapes."""
import gguf
import numpy as np
import pytest

from engine_fixtures import ref_tiny_path, ref_tiny_weights, synth_tiny_path, tmp_dir, write_ref_gguf  # sets sys.path
from ds4_ref_weights import read_hparams  # noqa: E402  (tests/reference, path set by engine_fixtures)

from ds4kit import _engine


@pytest.mark.parametrize("which", ["synth", "reference"])
def test_hparams_match_gguf_py(which):
    path = synth_tiny_path() if which == "synth" else ref_tiny_path()
    want = read_hparams(gguf.GGUFReader(str(path)), str(path))
    got = _engine.Model(str(path), threads=1).hparams
    fields = {
        "n_layer", "n_embd", "n_vocab", "n_head", "n_head_kv", "head_dim", "n_rot", "q_lora_rank", "o_lora_rank",
        "o_groups", "n_expert", "n_expert_used", "n_expert_shared", "n_hash_layers", "expert_weights_norm",
        "expert_gating_func", "n_swa", "idx_n_head", "idx_head_dim", "idx_top_k", "n_hc", "yarn_orig_ctx",
        "compress_ratios",
    }
    for f in fields:
        assert got[f] == getattr(want, f), f
    assert got["n_ff_exp"] == want.n_ff_exp
    assert got["sinkhorn_iters"] == want.sinkhorn_iters
    floats = ["expert_weights_scale", "hc_eps", "rms_eps", "rope_freq_base", "compress_rope_freq_base",
              "yarn_factor", "yarn_beta_fast", "yarn_beta_slow"]
    for f in floats:
        assert got[f] == pytest.approx(getattr(want, f), rel=1e-7), f
    assert got["swiglu_clamp_exp"] == pytest.approx(want.swiglu_clamp_exp)
    assert got["swiglu_clamp_shexp"] == pytest.approx(want.swiglu_clamp_shexp)


def _write(weights, name):
    return str(write_ref_gguf(weights, tmp_dir() / name))


def test_missing_tensor_is_named():
    w = ref_tiny_weights()
    del w.tensors["blk.1.attn_compressor_norm.weight"]
    path = _write(w, "missing-tensor.gguf")
    with pytest.raises(_engine.FormatError, match=r"'blk\.1\.attn_compressor_norm\.weight' is missing.*\[128\]"):
        _engine.Model(path)


def test_wrong_shape_names_tensor_expected_and_actual():
    w = ref_tiny_weights()
    w.tensors["blk.0.attn_kv.weight"] = w.tensors["blk.0.attn_kv.weight"][:64]   # 64 outputs instead of 128
    path = _write(w, "bad-shape.gguf")
    with pytest.raises(_engine.FormatError) as e:
        _engine.Model(path)
    msg = str(e.value)
    assert "blk.0.attn_kv.weight" in msg and "[64, 64]" in msg and "expected [64, 128]" in msg, msg


def test_missing_key_is_named(monkeypatch):
    original = gguf.GGUFWriter.add_uint32

    def skip_q_lora(self, key, val):
        if key != "deepseek4.attention.q_lora_rank":
            original(self, key, val)

    monkeypatch.setattr(gguf.GGUFWriter, "add_uint32", skip_q_lora)
    path = _write(ref_tiny_weights(), "missing-key.gguf")
    monkeypatch.undo()
    with pytest.raises(_engine.FormatError, match=r"'deepseek4\.attention\.q_lora_rank' is missing"):
        _engine.Model(path)


def test_bad_compress_ratio_is_named():
    path = _write(ref_tiny_weights(compress_ratios=[0, 4, 3]), "bad-ratio.gguf")
    with pytest.raises(_engine.FormatError, match=r"compress_ratios' has ratio 3"):
        _engine.Model(path)


def test_missing_file_is_an_argument_error():
    with pytest.raises(_engine.Ds4Error, match="no-such-model.gguf"):
        _engine.Model(str(tmp_dir() / "no-such-model.gguf"))


def test_bad_tokens_and_context_overflow():
    model = _engine.Model(str(ref_tiny_path()), threads=1)
    V = model.hparams["n_vocab"]
    s = model.session(max_ctx=4)
    for bad in (-1, V, V + 1000):
        with pytest.raises(_engine.ArgumentError, match=rf"token id {bad} .*0\.\.{V - 1}"):
            s.decode(bad)
    with pytest.raises(_engine.ArgumentError, match=rf"token id {V} \(at index 1\)"):
        s.verify([0, V, 1])
    with pytest.raises(_engine.ArgumentError, match=r"token id 4294967296 \(at index 2\)"):
        s.prefill(np.array([0, 1, 2**32]), mode="exact")
    assert s.pos == 0  # a rejected call leaves the state alone
    first = s.verify([1, 2, 3])
    with pytest.raises(_engine.ArgumentError, match=r"context overflow: position 3 \+ 2 tokens exceeds max_ctx 4"):
        s.verify([4, 5])
    with pytest.raises(_engine.ArgumentError, match=r"max_ctx 4"):
        s.prefill([4, 5], mode="batched")
    assert s.pos == 3
    s.decode(4)
    with pytest.raises(_engine.ArgumentError, match=r"position 4 \+ 1 tokens exceeds max_ctx 4"):
        s.decode(5)
    # The rejected calls did not disturb the state: a fresh session gives the same rows.
    again = model.session(max_ctx=4).verify([1, 2, 3])
    assert np.array_equal(first, again)


def test_bad_arguments():
    model = _engine.Model(str(ref_tiny_path()), threads=1)
    s = model.session(max_ctx=8)
    with pytest.raises(_engine.ArgumentError, match="prefill mode 'fast'"):
        s.prefill([1, 2], mode="fast")
    with pytest.raises(_engine.ArgumentError, match="at least one token"):
        s.verify([])
    with pytest.raises(_engine.ArgumentError, match="max_ctx must be at least 1, got 0"):
        model.session(max_ctx=0)


def test_type_without_kernels_is_named():
    # Q5_0 is a valid ggml type the engine has no dot kernel for.
    w = ref_tiny_weights()
    path = str(tmp_dir() / "q5_0.gguf")
    from ds4_ref_gguf_writer import write_gguf

    write_gguf(w, path, qtypes={"blk.2.ffn_up_shexp.weight": gguf.GGMLQuantizationType.Q5_0})
    with pytest.raises(_engine.UnsupportedError, match=r"blk\.2\.ffn_up_shexp\.weight.*Q5_0"):
        _engine.Model(path)


def test_hash_routing_table_out_of_range_is_named():
    w = ref_tiny_weights()
    table = w.tensors["blk.0.ffn_gate_tid2eid.weight"].copy()
    table[7, 1] = w.hp.n_expert          # token 7 routes to an expert that does not exist
    w.tensors["blk.0.ffn_gate_tid2eid.weight"] = table
    path = _write(w, "bad-tid2eid.gguf")
    # Checked at load time, so a forward pass never fails half-way through.
    with pytest.raises(_engine.FormatError, match=rf"ffn_gate_tid2eid\.weight' maps token 7 to expert {w.hp.n_expert}"):
        _engine.Model(path)


def test_file_resident_bytes_counts_this_process_pages():
    """Model.file_resident_bytes reads the mapping's Rss: the CPU backend computes from the
    mapping, so compute pulls the weights in (a GPU backend drops them: tests/gpu)."""
    path = synth_tiny_path()
    size = path.stat().st_size
    m = _engine.Model(str(path), threads=1, backend="cpu")
    before = m.file_resident_bytes
    s = m.session(32)
    s.prefill([1, 2, 3, 4], "batched")
    s.decode(5)
    after = m.file_resident_bytes
    assert 0 <= before <= size and 0 < after <= size
    assert after > before and after > 0.25 * size  # the weights one forward reads are now mapped
