"""Plain float64 reference of the DSpark drafter forward (ds4-model.md section 6), the oracle
of the engine's Ds4Drafter. Written from the spec and Lucebox's semantics
(server/src/deepseek4/deepseek4_graph.cpp deepseek4_dspark_draft_forward and
build_dspark_attention; server/src/common/dspark_head.cpp build_markov_chain_graph;
server/src/deepseek4/deepseek4_dspark_spec.cpp), reusing the target reference's helpers.

    d = load_drafter("drafter.gguf")                 # gguf-py, every tensor float64
    t = load_weights("target.gguf")                  # the target: token_embd and output
    out = propose(d, t, features, seed, pos)         # features [n_ctx, n_cap * n_embd]
    out["logits"], out["confidence"], out["tokens"]

Forward, per Lucebox:
  main_x_c = N_hidden_norm(W_fc N(F_c)) for the context rows (positions pos - n_ctx ..);
  block = token_embd[seed, MASK x (B-1)] at positions pos .. pos + B - 1, all streams equal;
  per block: HC-pre -> attn_norm -> q / kv of the block rows; context K rows =
  N_kv_a_norm(W_kv main_x) (no attn_norm); RoPE base rope.freq_base (no YaRN) at absolute
  positions; each block row attends to every context and block row (no mask) with the sink;
  inverse RoPE, grouped output, HC-post; HC-pre -> MoE (no hash layers) -> HC-post;
  head: e_i = HC collapse (the confidence head's input h_pre), lm_head(N_output_norm(e_i));
  candidate i from block row i: logits_i = lm_head_i + W2 W1[prev_i], prev_0 = seed,
  prev_i = candidate i-1 (argmax); confidence_i = sigmoid(conf . [e_i; W1[prev_i]] + b).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ds4_ref_numerics import (
    RopeParams, clamped_swiglu, hc_post, hc_pre, norm_rows_unweighted, norm_unweighted, norm_weighted,
    rope_tail, sigmoid, softplus, top_k_indices, MOE_WEIGHT_SUM_FLOOR,
)
from ds4_ref_weights import ReferenceFormatError, Weights, load_weights

DRAFTER_ARCH = "deepseek4-dflash-draft"


@dataclass
class Drafter:
    w: Weights
    block_size: int
    mask_token_id: int
    capture_layers: list[int]
    markov_rank: int
    confidence_dim: int


def load_drafter(path) -> Drafter:
    import gguf

    w = load_weights(path, DRAFTER_ARCH)
    r = gguf.GGUFReader(str(path))

    def key(k, default=None):
        f = r.fields.get(f"{DRAFTER_ARCH}.{k}")
        if f is None:
            if default is None:
                raise ReferenceFormatError(f"{path}: GGUF key '{DRAFTER_ARCH}.{k}' is missing")
            return default
        return f.contents()

    return Drafter(w=w, block_size=int(key("dflash.block_size")), mask_token_id=int(key("dflash.mask_token_id")),
                   capture_layers=[int(x) for x in key("dflash.capture_layer_ids")],
                   markov_rank=int(key("dflash.dspark.markov_rank")),
                   confidence_dim=int(key("dflash.dspark.confidence_dim", 0)))


def _attend(Q, K, sinks, head_dim):
    """Every query row against every key row (V = K), the sink in the denominator."""
    s = (Q @ K.T) / math.sqrt(head_dim)
    m = np.maximum(np.max(s, axis=1), sinks)
    e = np.exp(s - m[:, None])
    return (e @ K) / (e.sum(axis=1) + np.exp(sinks - m))[:, None]


def _moe(d: Drafter, il: int, h2):
    hp, w = d.w.hp, d.w
    b = f"blk.{il}."
    s = np.sqrt(softplus(w[b + "ffn_gate_inp.weight"] @ h2))
    experts = top_k_indices(s + w[b + "exp_probs_b.bias"], hp.n_expert_used)  # no hash layers
    weights = s[experts]
    if hp.expert_weights_norm:
        weights = weights / max(float(np.sum(weights)), MOE_WEIGHT_SUM_FLOOR)
    weights = weights * hp.expert_weights_scale
    y = np.zeros(hp.n_embd)
    for e_id, w_e in zip(experts, weights):
        act = clamped_swiglu(w[b + "ffn_gate_exps.weight"][e_id] @ h2, w[b + "ffn_up_exps.weight"][e_id] @ h2,
                             hp.swiglu_clamp_exp[il])
        y += w_e * (w[b + "ffn_down_exps.weight"][e_id] @ act)
    act = clamped_swiglu(w[b + "ffn_gate_shexp.weight"] @ h2, w[b + "ffn_up_shexp.weight"] @ h2,
                         hp.swiglu_clamp_shexp[il])
    return y + w[b + "ffn_down_shexp.weight"] @ act


def hidden_states(d: Drafter, target: Weights, features: np.ndarray, seed: int, pos: int):
    """(h_pre [B, E], lm-head logits [B, V]) of the block at pos given the context features."""
    hp, w = d.w.hp, d.w
    E, B, H, D = hp.n_embd, d.block_size, hp.n_head, hp.head_dim
    n_ctx = features.shape[0]
    F = np.asarray(features, dtype=np.float64).reshape(n_ctx, int(np.prod(features.shape[1:])))[max(0, n_ctx - hp.n_swa):]
    C = F.shape[0]
    rope = RopeParams(n_rot=hp.n_rot, freq_base=hp.rope_freq_base)
    main_x = [norm_weighted(w["dflash.fc.weight"] @ norm_unweighted(f, hp.rms_eps), w["dflash.hidden_norm.weight"],
                            hp.rms_eps) for f in F]
    toks = [seed] + [d.mask_token_id] * (B - 1)
    X = [np.repeat(target["token_embd.weight"][t][None, :], hp.n_hc, axis=0) for t in toks]
    for il in range(hp.n_layer):
        b = f"blk.{il}."
        Qs, kvs, splits = [], [], []
        for i in range(B):
            u, split = hc_pre(X[i], w[b + "hc_attn_fn.weight"], w[b + "hc_attn_scale.weight"],
                              w[b + "hc_attn_base.weight"], hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps)
            h = norm_weighted(u, w[b + "attn_norm.weight"], hp.rms_eps)
            q_lat = norm_weighted(w[b + "attn_q_a.weight"] @ h, w[b + "attn_q_a_norm.weight"], hp.rms_eps)
            Q = norm_rows_unweighted((w[b + "attn_q_b.weight"] @ q_lat).reshape(H, D), hp.rms_eps)
            kv = norm_weighted(w[b + "attn_kv.weight"] @ h, w[b + "attn_kv_a_norm.weight"], hp.rms_eps)
            Qs.append(rope_tail(Q, pos + i, rope))
            kvs.append(rope_tail(kv, pos + i, rope))
            splits.append(split)
        ctx = [rope_tail(norm_weighted(w[b + "attn_kv.weight"] @ m, w[b + "attn_kv_a_norm.weight"], hp.rms_eps),
                         pos - C + c, rope) for c, m in enumerate(main_x)]
        K = np.array(ctx + kvs).reshape(C + B, D)
        W_oa, R = w[b + "attn_output_a.weight"], hp.o_lora_rank
        for i in range(B):
            O = rope_tail(_attend(Qs[i], K, w[b + "attn_sinks.weight"], D), pos + i, rope, inverse=True)
            groups = O.reshape(hp.o_groups, -1)
            z = np.concatenate([W_oa[g * R:(g + 1) * R] @ groups[g] for g in range(hp.o_groups)])
            X[i] = hc_post(w[b + "attn_output_b.weight"] @ z, X[i], splits[i])
        for i in range(B):
            u2, split = hc_pre(X[i], w[b + "hc_ffn_fn.weight"], w[b + "hc_ffn_scale.weight"],
                               w[b + "hc_ffn_base.weight"], hp.sinkhorn_iters, hp.hc_eps, hp.rms_eps)
            X[i] = hc_post(_moe(d, il, norm_weighted(u2, w[b + "ffn_norm.weight"], hp.rms_eps)), X[i], split)
    pre, logits = [], []
    for i in range(B):
        x = norm_unweighted(X[i].reshape(-1), hp.rms_eps)
        m = w["output_hc_fn.weight"] @ x
        wh = sigmoid(m * float(w["output_hc_scale.weight"].reshape(-1)[0]) + w["output_hc_base.weight"]) + hp.hc_eps
        e = wh @ X[i]
        pre.append(e)
        logits.append(target["output.weight"] @ norm_weighted(e, w["output_norm.weight"], hp.rms_eps))
    return np.array(pre), np.array(logits)


def propose(d: Drafter, target: Weights, features, seed: int, pos: int, prev_tokens=None):
    """The Markov chain over the block's rows. prev_tokens (the candidates chosen so far, e.g.
    the engine's) replaces the reference's own argmax as prev_1.., so a near tie in one
    candidate does not change the inputs of the next."""
    w, E = d.w, d.w.hp.n_embd
    pre, base = hidden_states(d, target, features, seed, pos)
    W1, W2 = w["dflash.dspark.markov.w1"], w["dflash.dspark.markov.w2"]   # numpy (V, R)
    logits, conf, toks = [], [], []
    prev = seed
    for i in range(d.block_size):
        row = W1[prev]
        li = base[i] + W2 @ row
        logits.append(li)
        toks.append(int(np.argmax(li)))
        if d.confidence_dim:
            cin = np.concatenate([pre[i], row]) if d.confidence_dim > E else pre[i]
            z = float(w["dflash.dspark.confidence.weight"].reshape(-1) @ cin)
            conf.append(float(sigmoid(z + float(w["dflash.dspark.confidence.bias"].reshape(-1)[0]))))
        prev = toks[-1] if prev_tokens is None else int(prev_tokens[i])
    return {"logits": np.array(logits), "confidence": np.array(conf) if d.confidence_dim else None, "tokens": toks}
