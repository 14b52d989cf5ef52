"""Write a numpy weight set (ds4_ref_tiny) as a deepseek4 GGUF with gguf-py.

Used to test load_weights, and to run llama.cpp on exactly the weights the reference
uses. With tokenizer.ggml.model = "none" llama.cpp adds `vocab_size` dummy tokens,
so a tiny vocab works (we feed token ids, never text). Keys and tensor names follow
llama.cpp 0.3.36 (src/llama-arch.cpp, src/models/deepseek4.cpp)."""
from __future__ import annotations

import numpy as np

from ds4_ref_weights import ARCH, Weights

# Tensors llama.cpp reads as plain F32 / I32 whatever the quant mix.
_KEEP_F32_SUFFIXES = ("_norm.weight", "attn_sinks.weight", "exp_probs_b.bias", "_scale.weight",
                      "_base.weight")


def write_gguf(weights: Weights, path, qtypes: dict[str, "object"] | None = None,
               context_length: int = 4096) -> None:
    """qtypes maps tensor name -> gguf.GGMLQuantizationType (default F32). Quantised
    tensors are written as gguf.quants.quantize gives them."""
    import gguf
    from gguf.quants import quantize

    hp = weights.hp
    qtypes = qtypes or {}
    w = gguf.GGUFWriter(str(path), ARCH)
    a = ARCH
    w.add_uint32(f"{a}.block_count", hp.n_layer)
    w.add_uint32(f"{a}.context_length", context_length)
    w.add_uint32(f"{a}.embedding_length", hp.n_embd)
    w.add_uint32(f"{a}.vocab_size", hp.n_vocab)
    w.add_uint32(f"{a}.attention.head_count", hp.n_head)
    w.add_uint32(f"{a}.attention.head_count_kv", hp.n_head_kv)
    w.add_uint32(f"{a}.attention.key_length", hp.head_dim)
    w.add_uint32(f"{a}.attention.value_length", hp.head_dim)
    w.add_uint32(f"{a}.rope.dimension_count", hp.n_rot)
    w.add_uint32(f"{a}.attention.q_lora_rank", hp.q_lora_rank)
    w.add_uint32(f"{a}.attention.output_lora_rank", hp.o_lora_rank)
    w.add_uint32(f"{a}.attention.output_group_count", hp.o_groups)
    w.add_uint32(f"{a}.expert_count", hp.n_expert)
    w.add_uint32(f"{a}.expert_used_count", hp.n_expert_used)
    w.add_uint32(f"{a}.expert_shared_count", hp.n_expert_shared)
    w.add_uint32(f"{a}.expert_feed_forward_length", hp.n_ff_exp)
    w.add_uint32(f"{a}.hash_layer_count", hp.n_hash_layers)
    w.add_float32(f"{a}.expert_weights_scale", hp.expert_weights_scale)
    w.add_bool(f"{a}.expert_weights_norm", hp.expert_weights_norm)
    w.add_uint32(f"{a}.expert_gating_func", hp.expert_gating_func)
    w.add_uint32(f"{a}.attention.sliding_window", hp.n_swa)
    w.add_uint32(f"{a}.attention.indexer.head_count", hp.idx_n_head)
    w.add_uint32(f"{a}.attention.indexer.key_length", hp.idx_head_dim)
    w.add_uint32(f"{a}.attention.indexer.top_k", hp.idx_top_k)
    w.add_uint32(f"{a}.hyper_connection.count", hp.n_hc)
    w.add_uint32(f"{a}.hyper_connection.sinkhorn_iterations", hp.sinkhorn_iters)
    w.add_float32(f"{a}.hyper_connection.epsilon", hp.hc_eps)
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", hp.rms_eps)
    w.add_float32(f"{a}.rope.freq_base", hp.rope_freq_base)
    w.add_float32(f"{a}.attention.compress_rope_freq_base", hp.compress_rope_freq_base)
    w.add_string(f"{a}.rope.scaling.type", "yarn")
    w.add_float32(f"{a}.rope.scaling.factor", hp.yarn_factor)
    w.add_float32(f"{a}.rope.scaling.yarn_beta_fast", hp.yarn_beta_fast)
    w.add_float32(f"{a}.rope.scaling.yarn_beta_slow", hp.yarn_beta_slow)
    w.add_uint32(f"{a}.rope.scaling.original_context_length", hp.yarn_orig_ctx)
    w.add_array(f"{a}.swiglu_clamp_exp", [float(x) for x in hp.swiglu_clamp_exp])
    w.add_array(f"{a}.attention.compress_ratios", [int(x) for x in hp.compress_ratios])
    w.add_string("tokenizer.ggml.model", "none")

    for name, arr in weights.tensors.items():
        if arr.dtype.kind in "iu":
            w.add_tensor(name, np.ascontiguousarray(arr, dtype=np.int32))
            continue
        qt = qtypes.get(name, gguf.GGMLQuantizationType.F32)
        if name.endswith(_KEEP_F32_SUFFIXES):
            qt = gguf.GGMLQuantizationType.F32
        if qt == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, np.ascontiguousarray(arr, dtype=np.float32))
        elif qt == gguf.GGMLQuantizationType.F16:
            w.add_tensor(name, np.ascontiguousarray(arr, dtype=np.float16))
        else:
            q = quantize(np.ascontiguousarray(arr, dtype=np.float32), qt)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
