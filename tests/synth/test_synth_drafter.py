"""The DSpark drafter GGUF (ds4-model.md section 6), read back with gguf-py.

It cannot load in llama.cpp (no such architecture there), so we check its keys and
shapes against the section-6 description and the contract Lucebox's loader enforces."""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGUFReader
from gguf.constants import GGUFValueType as VT

ARCH = "deepseek4-dflash-draft"


@pytest.fixture(scope="module")
def drafter(synth_tiny_files):
    return GGUFReader(synth_tiny_files.drafter.path), synth_tiny_files.cfg


def _kv(reader, key):
    f = reader.fields[key]
    if f.types[0] == VT.STRING:
        return bytes(f.parts[f.data[0]]).decode()
    if f.types[0] == VT.ARRAY:
        return [f.parts[i].tolist()[0] for i in f.data]
    return f.parts[f.data[0]].tolist()[0]


def _type(reader, key):
    return reader.fields[key].types


def test_architecture_and_model_keys(drafter):
    r, c = drafter
    assert _kv(r, "general.architecture") == ARCH
    p = ARCH + "."
    assert _kv(r, p + "block_count") == 3
    assert _kv(r, p + "embedding_length") == c.n_embd
    assert _kv(r, p + "vocab_size") == 129280
    assert _kv(r, p + "attention.head_count") == c.n_head
    assert _kv(r, p + "attention.compress_ratios") == [0, 0, 0]
    assert _kv(r, p + "hash_layer_count") == 0
    # Lucebox reads the clamp as a FLOAT32 scalar
    assert _type(r, p + "swiglu_clamp_exp") == [VT.FLOAT32] and _kv(r, p + "swiglu_clamp_exp") == 10.0
    assert "tokenizer.ggml.tokens" not in r.fields  # the drafter uses the target's tokenizer


def test_dflash_keys(drafter):
    r, c = drafter
    p = ARCH + ".dflash."
    expect_u32 = {"n_target_layers": 3, "block_size": 5, "mask_token_id": 128799, "head_hc_enabled": 1,
                  "dspark.enabled": 1, "dspark.markov_rank": c.draft_markov_rank, "dspark.vocab_size": 129280,
                  "dspark.confidence_dim": c.n_embd + c.draft_markov_rank}
    for k, v in expect_u32.items():
        assert _type(r, p + k) == [VT.UINT32], k
        assert _kv(r, p + k) == v, k
    assert _type(r, p + "capture_layer_ids") == [VT.ARRAY, VT.INT32]
    assert _kv(r, p + "capture_layer_ids") == [c.n_layer - 3, c.n_layer - 2, c.n_layer - 1]


def test_tensor_shapes_match_section_6_and_the_lucebox_contract(drafter):
    r, c = drafter
    E, V, R = c.n_embd, 129280, c.draft_markov_rank
    t = {x.name: x for x in r.tensors}
    shape = {n: tuple(int(s) for s in x.shape) for n, x in t.items()}
    n_target = _kv(r, ARCH + ".dflash.n_target_layers")
    assert shape["dflash.fc.weight"] == (n_target * E, E)
    assert shape["dflash.hidden_norm.weight"] == (E,)
    assert shape["dflash.dspark.markov.w1"] == (R, V) and shape["dflash.dspark.markov.w2"] == (R, V)
    assert shape["dflash.dspark.confidence.weight"] == (_kv(r, ARCH + ".dflash.dspark.confidence_dim"), 1)
    assert int(np.prod(shape["dflash.dspark.confidence.bias"])) == 1
    assert shape["output_hc_fn.weight"] == (4 * E, 4) and shape["output_norm.weight"] == (E,)
    assert "token_embd.weight" not in t and "output.weight" not in t  # the target's are used
    for i in range(3):
        b = f"blk.{i}."
        for leaf in ("attn_norm", "attn_q_a", "attn_q_a_norm", "attn_q_b", "attn_kv", "attn_kv_a_norm",
                     "attn_sinks", "attn_output_a", "attn_output_b", "hc_attn_fn", "hc_attn_scale", "hc_attn_base",
                     "ffn_norm", "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps",
                     "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", "hc_ffn_fn", "hc_ffn_scale", "hc_ffn_base"):
            assert b + leaf + ".weight" in t, b + leaf
        assert b + "exp_probs_b.bias" in t  # score-routed, never hash-routed
        assert not any(n.startswith(b) and ("compressor" in n or "indexer" in n or "tid2eid" in n) for n in t)
    assert not any(n.startswith("blk.3.") for n in t)


def test_norms_and_biases_stay_f32(drafter):
    r, _ = drafter
    for x in r.tensors:
        if "norm" in x.name or x.name.endswith(".bias") or "sinks" in x.name or "_scale" in x.name or "_base" in x.name:
            assert x.tensor_type.name == "F32", x.name


# Lucebox's loader (server/src/deepseek4/deepseek4_dspark.cpp, recognized_dspark_tensor) refuses a
# drafter holding any other tensor ("unexpected DSpark tensor"), so the synth file must hold only these.
_LUCEBOX_GLOBAL = {"output_norm.weight", "output_hc_base.weight", "output_hc_fn.weight", "output_hc_scale.weight",
                   "dflash.fc.weight", "dflash.hidden_norm.weight", "dflash.dspark.markov.w1",
                   "dflash.dspark.markov.w2", "dflash.dspark.confidence.weight", "dflash.dspark.confidence.bias"}
_LUCEBOX_BLOCK = {"attn_norm.weight", "attn_q_a.weight", "attn_q_a_norm.weight", "attn_q_b.weight", "attn_kv.weight",
                  "attn_kv_a_norm.weight", "attn_sinks.weight", "attn_output_a.weight", "attn_output_b.weight",
                  "hc_attn_fn.weight", "hc_attn_scale.weight", "hc_attn_base.weight", "ffn_norm.weight",
                  "ffn_gate_inp.weight", "exp_probs_b.bias", "ffn_gate_exps.weight", "ffn_up_exps.weight",
                  "ffn_down_exps.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight",
                  "hc_ffn_fn.weight", "hc_ffn_scale.weight", "hc_ffn_base.weight"}


def test_every_tensor_is_one_lucebox_recognises(drafter):
    r, _ = drafter
    names = {x.name for x in r.tensors}
    block = {f"blk.{i}.{leaf}" for i in range(3) for leaf in _LUCEBOX_BLOCK}
    assert names <= _LUCEBOX_GLOBAL | block, sorted(names - _LUCEBOX_GLOBAL - block)
    assert names == _LUCEBOX_GLOBAL | block  # and every one it needs (the confidence pair included)
