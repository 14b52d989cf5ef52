"""Tiny random deepseek4 weight sets built directly in numpy, for the reference's own
unit tests (no GGUF needed). Same tensor names and numpy shapes as load_weights gives."""
from __future__ import annotations

import numpy as np

from ds4_ref_weights import Hparams, Weights


def tiny_hparams(**over) -> Hparams:
    hp = dict(
        n_layer=3, n_embd=64, n_vocab=97, n_head=4, n_head_kv=1, head_dim=128, n_rot=64,
        q_lora_rank=32, o_lora_rank=16, o_groups=2, n_expert=8, n_expert_used=2,
        n_expert_shared=1, n_ff_exp=32, n_hash_layers=1, expert_weights_scale=1.5,
        expert_weights_norm=True, expert_gating_func=4, n_swa=16, idx_n_head=2,
        idx_head_dim=128, idx_top_k=3, n_hc=4, sinkhorn_iters=20, hc_eps=1e-6, rms_eps=1e-6,
        rope_freq_base=10000.0, compress_rope_freq_base=160000.0, yarn_factor=16.0,
        yarn_beta_fast=32.0, yarn_beta_slow=1.0, yarn_orig_ctx=65536,
        compress_ratios=[0, 4, 128],
    )
    hp.update(over)
    n = hp["n_layer"]
    hp.setdefault("swiglu_clamp_exp", [10.0] * n)
    hp.setdefault("swiglu_clamp_shexp", [10.0] * n)
    return Hparams(**hp)


def tiny_weights(seed: int = 0, ffn_gain: float = 1.0, **over) -> Weights:
    """ffn_gain scales the expert and shared gate/up projections; ~6 makes the
    SwiGLU clamp at 10 bite on a fair share of values."""
    hp = tiny_hparams(**over)
    rng = np.random.default_rng(seed)

    def mat(out_dim, in_dim, gain=1.0):
        return rng.standard_normal((out_dim, in_dim)) * gain / np.sqrt(in_dim)

    def near_one(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    E, D, H, V = hp.n_embd, hp.head_dim, hp.n_head, hp.n_vocab
    n_mix = (2 + hp.n_hc) * hp.n_hc
    t: dict[str, np.ndarray] = {
        "token_embd.weight": rng.standard_normal((V, E)),
        "output.weight": mat(V, E),
        "output_norm.weight": near_one(E),
        "output_hc_fn.weight": mat(hp.n_hc, hp.n_hc * E, 0.5),
        "output_hc_base.weight": 0.1 * rng.standard_normal(hp.n_hc),
        "output_hc_scale.weight": np.array([1.0]),
    }
    for il, r in enumerate(hp.compress_ratios):
        b = f"blk.{il}."
        t.update({
            b + "attn_norm.weight": near_one(E),
            b + "attn_q_a.weight": mat(hp.q_lora_rank, E),
            b + "attn_q_a_norm.weight": near_one(hp.q_lora_rank),
            b + "attn_q_b.weight": mat(H * D, hp.q_lora_rank),
            b + "attn_kv.weight": mat(D, E),
            b + "attn_kv_a_norm.weight": near_one(D),
            b + "attn_sinks.weight": 0.5 * rng.standard_normal(H),
            b + "attn_output_a.weight": mat(hp.o_groups * hp.o_lora_rank, H * D // hp.o_groups),
            b + "attn_output_b.weight": mat(E, hp.o_groups * hp.o_lora_rank),
            b + "ffn_norm.weight": near_one(E),
            b + "ffn_gate_inp.weight": mat(hp.n_expert, E),
            b + "ffn_gate_exps.weight": rng.standard_normal((hp.n_expert, hp.n_ff_exp, E)) * ffn_gain / np.sqrt(E),
            b + "ffn_up_exps.weight": rng.standard_normal((hp.n_expert, hp.n_ff_exp, E)) * ffn_gain / np.sqrt(E),
            b + "ffn_down_exps.weight": rng.standard_normal((hp.n_expert, E, hp.n_ff_exp))
            / (ffn_gain ** 2 * np.sqrt(hp.n_ff_exp)),
            b + "ffn_gate_shexp.weight": mat(hp.n_ff_exp, E, ffn_gain),
            b + "ffn_up_shexp.weight": mat(hp.n_ff_exp, E, ffn_gain),
            b + "ffn_down_shexp.weight": mat(E, hp.n_ff_exp, 1.0 / ffn_gain ** 2),
        })
        for s in ("attn", "ffn"):
            t[b + f"hc_{s}_fn.weight"] = mat(n_mix, hp.n_hc * E, 0.5)
            t[b + f"hc_{s}_scale.weight"] = np.array([1.0, 1.0, 1.0]) + 0.1 * rng.standard_normal(3)
            t[b + f"hc_{s}_base.weight"] = 0.1 * rng.standard_normal(n_mix)
        if il < hp.n_hash_layers:
            t[b + "ffn_gate_tid2eid.weight"] = np.stack(
                [rng.choice(hp.n_expert, hp.n_expert_used, replace=False) for _ in range(V)]).astype(np.int64)
        else:
            t[b + "exp_probs_b.bias"] = 0.05 * rng.standard_normal(hp.n_expert)
        if r:
            c = 2 if r == 4 else 1
            t.update({
                b + "attn_compressor_kv.weight": mat(c * D, E),
                b + "attn_compressor_gate.weight": mat(c * D, E),
                b + "attn_compressor_ape.weight": 0.3 * rng.standard_normal((r, c * D)),
                b + "attn_compressor_norm.weight": near_one(D),
            })
            if r == 4:
                di = hp.idx_head_dim
                t.update({
                    b + "indexer.attn_q_b.weight": mat(hp.idx_n_head * di, hp.q_lora_rank),
                    b + "indexer.proj.weight": mat(hp.idx_n_head, E),
                    b + "indexer_compressor_kv.weight": mat(2 * di, E),
                    b + "indexer_compressor_gate.weight": mat(2 * di, E),
                    b + "indexer_compressor_ape.weight": 0.3 * rng.standard_normal((r, 2 * di)),
                    b + "indexer_compressor_norm.weight": near_one(di),
                })
    return Weights(hp=hp, tensors=t)
