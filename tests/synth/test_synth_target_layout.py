"""The tiny target's metadata and tensor set, checked against the HF tokenizer and the section-1/2 structure."""
from __future__ import annotations

import json

import numpy as np
import pytest
from tokenizers import Tokenizer

from ds4kit.synth.tokenizer_meta import tokenizer_json_path

from synth_gguf_raw import read_raw

F32, F16, I32 = 0, 1, 26


@pytest.fixture(scope="module")
def tiny(synth_tiny_files):
    kv, tensors, buf = read_raw(synth_tiny_files.target.path)
    return kv, {t.name: t for t in tensors}, buf, synth_tiny_files.cfg


def test_tokenizer_metadata_matches_hf_tokenizers(tiny):
    kv, _, _, _ = tiny
    hf = Tokenizer.from_file(str(tokenizer_json_path()))
    tokens = kv["tokenizer.ggml.tokens"]
    assert len(tokens) == hf.get_vocab_size(with_added_tokens=True) == 129280
    assert all(tokens[i] == hf.id_to_token(i) for i in range(len(tokens)))
    assert kv["tokenizer.ggml.model"] == "gpt2" and kv["tokenizer.ggml.pre"] == "joyai-llm"
    assert kv["tokenizer.ggml.bos_token_id"] == hf.token_to_id("<｜begin▁of▁sentence｜>") == 0
    assert kv["tokenizer.ggml.eos_token_id"] == hf.token_to_id("<｜end▁of▁sentence｜>") == 1
    types = kv["tokenizer.ggml.token_type"]
    assert types[0] == 3 and types[hf.token_to_id("<｜User｜>")] == 4 and types[1000] == 1
    assert len(kv["tokenizer.ggml.merges"]) > 100000
    config = json.loads(tokenizer_json_path().with_name("tokenizer_config.json").read_text())
    assert kv["tokenizer.ggml.add_bos_token"] is bool(config["add_bos_token"])


def test_model_keys(tiny):
    kv, _, _, c = tiny
    p = "deepseek4."
    assert kv["general.architecture"] == "deepseek4"
    assert kv[p + "block_count"] == c.n_layer and kv[p + "embedding_length"] == c.n_embd
    assert kv[p + "attention.compress_ratios"] == [0, 0, 4, 128, 4]
    assert kv[p + "attention.indexer.key_length"] == 128  # llama.cpp needs 128
    assert kv[p + "expert_gating_func"] == 4 and kv[p + "expert_weights_norm"] is True
    assert kv[p + "swiglu_clamp_exp"] == kv[p + "swiglu_clamp_shexp"] == [10.0] * c.n_layer
    assert kv[p + "rope.scaling.type"] == "yarn" and kv[p + "rope.scaling.factor"] == 16.0
    assert kv["ds4kit.synth.seed"] == 0 and kv["ds4kit.synth.preset"] == "tiny"


def test_structure_per_layer(tiny):
    _, t, _, c = tiny
    for i, ratio in enumerate([0, 0, 4, 128, 4]):
        b = f"blk.{i}."
        assert (b + "attn_compressor_kv.weight" in t) == (ratio > 0), b
        assert (b + "indexer.proj.weight" in t) == (ratio == 4), b
        hashed = i < c.hash_layers
        assert (b + "ffn_gate_tid2eid.weight" in t) == hashed and (b + "exp_probs_b.bias" in t) == (not hashed), b
        if ratio:
            width = (2 if ratio == 4 else 1) * c.head_dim
            assert t[b + "attn_compressor_ape.weight"].shape == (width, ratio)
        assert t[b + "attn_output_a.weight"].shape == (c.n_head * c.head_dim // c.o_groups, c.o_lora_rank * c.o_groups)
        assert t[b + "hc_attn_fn.weight"].shape == (4 * c.n_embd, 24)
        assert t[b + "ffn_down_exps.weight"].shape == (c.expert_ff, c.n_embd, c.n_expert)
    assert t["token_embd.weight"].shape == (c.n_embd, 129280) and t["token_embd.weight"].type_id == F16


def test_fixed_tensors_are_f32_or_i32_with_sane_values(tiny):
    _, t, buf, c = tiny
    for name, x in t.items():
        n = int(np.prod(x.shape))
        if name.endswith(("norm.weight", "_scale.weight", "_base.weight", "sinks.weight", ".bias")):
            assert x.type_id == F32, name
            v = np.frombuffer(buf, "<f4", n, x.offset)
            assert np.isfinite(v).all(), name
            if name.endswith("norm.weight"):
                assert 0.8 < v.min() and v.max() < 1.2, name
        if "tid2eid" in name:
            assert x.type_id == I32 and x.shape == (c.n_expert_used, 129280)
            ids = np.frombuffer(buf, "<i4", n, x.offset).reshape(129280, c.n_expert_used)
            assert ids.min() >= 0 and ids.max() < c.n_expert
            assert (ids[:, 0] != ids[:, 1]).all()
            assert len(np.unique(ids[:, 0])) == c.n_expert  # every expert gets tokens
    base = np.frombuffer(buf, "<f4", 24, t["blk.0.hc_attn_base.weight"].offset)
    comb = base[8:].reshape(4, 4)
    assert np.diag(comb).mean() > comb[~np.eye(4, dtype=bool)].mean() + 1.0  # residual mix near identity
