"""Which tensors a `deepseek4` target and a `deepseek4-dflash-draft` drafter hold.

Names and ggml shapes (innermost dim first) follow llama.cpp 0.3.36
(src/models/deepseek4.cpp, llama_model_deepseek4::load_arch_tensors) and agree
with ds4-model.md section 2, with these notes:
  * attn_output_a is stored 2-D [H*D/G, R*G]; llama.cpp reshapes it to 3-D on load.
  * shared-expert widths are expert_ff * n_expert_shared (llama.cpp), the spec's [E,F] for 1 shared.
  * exp_probs_b carries the suffix ".bias", every other tensor ".weight".
  * llama.cpp also accepts optional exp_probs_b_vl (vision) and nextn/MTP tensors; we write neither.
Drafter tensors follow ds4-model.md section 6 and Lucebox's deepseek4_dspark.cpp loader.
"""
from __future__ import annotations

from dataclasses import dataclass

from ds4kit.synth.config import SynthConfig


@dataclass(frozen=True)
class Planned:
    name: str
    shape: tuple[int, ...]   # ggml ne order
    group: str | None        # type group, or None for fixed-type tensors
    init: str                # how weights.py fills it
    std: float = 0.0         # for init == "gauss"
    fixed_type: str = "F32"  # used when group is None


def _g(name, shape, group, std) -> Planned:
    return Planned(name, tuple(int(s) for s in shape), group, "gauss", float(std))


def _f(name, shape, init, fixed_type="F32") -> Planned:
    return Planned(name, tuple(int(s) for s in shape), None, init, 0.0, fixed_type)


def fan_in_std(n: int) -> float:
    # keeps each projection's output RMS close to its (RMS-normalised) input's
    return 1.0 / float(n) ** 0.5


def _hc_head(c: SynthConfig) -> list[Planned]:
    hc_dim = c.hc_count * c.n_embd
    return [
        _g("output_hc_fn.weight", (hc_dim, c.hc_count), "hc", fan_in_std(hc_dim)),
        _f("output_hc_base.weight", (c.hc_count,), "hc_base_head"),
        _f("output_hc_scale.weight", (1,), "hc_scale"),
    ]


def _block(c: SynthConfig, i: int, ratio: int, hashed: bool) -> list[Planned]:
    E, H, D, F = c.n_embd, c.n_head, c.head_dim, c.expert_ff
    X, Fs = c.n_expert, c.expert_ff * c.n_expert_shared
    hc_dim, hc_mix = c.hc_count * E, (2 + c.hc_count) * c.hc_count
    p = f"blk.{i}."
    out = [
        _f(p + "attn_norm.weight", (E,), "norm"),
        _g(p + "attn_q_a.weight", (E, c.q_lora_rank), "attn", fan_in_std(E)),
        _f(p + "attn_q_a_norm.weight", (c.q_lora_rank,), "norm"),
        _g(p + "attn_q_b.weight", (c.q_lora_rank, H * D), "attn", fan_in_std(c.q_lora_rank)),
        _g(p + "attn_kv.weight", (E, D), "attn", fan_in_std(E)),
        _f(p + "attn_kv_a_norm.weight", (D,), "norm"),
        _f(p + "attn_sinks.weight", (H,), "sinks"),
        _g(p + "attn_output_a.weight", (H * D // c.o_groups, c.o_lora_rank * c.o_groups), "attn_out",
           fan_in_std(H * D // c.o_groups)),
        _g(p + "attn_output_b.weight", (c.o_groups * c.o_lora_rank, E), "attn_out",
           fan_in_std(c.o_groups * c.o_lora_rank)),
    ]
    for sub in ("attn", "ffn"):
        out += [
            _g(p + f"hc_{sub}_fn.weight", (hc_dim, hc_mix), "hc", fan_in_std(hc_dim)),
            _f(p + f"hc_{sub}_base.weight", (hc_mix,), "hc_base"),
            _f(p + f"hc_{sub}_scale.weight", (3,), "hc_scale"),
        ]
    if ratio:
        C = (2 if ratio == 4 else 1) * D
        out += [
            _g(p + "attn_compressor_kv.weight", (E, C), "compressor", fan_in_std(E)),
            _g(p + "attn_compressor_gate.weight", (E, C), "compressor", fan_in_std(E)),
            _g(p + "attn_compressor_ape.weight", (C, ratio), "compressor", 0.5),
            _f(p + "attn_compressor_norm.weight", (D,), "norm"),
        ]
        if ratio == 4:
            Hi, di = c.indexer_heads, c.indexer_dim
            out += [
                _g(p + "indexer.attn_q_b.weight", (c.q_lora_rank, Hi * di), "indexer", fan_in_std(c.q_lora_rank)),
                _g(p + "indexer.proj.weight", (E, Hi), "indexer", fan_in_std(E)),
                _g(p + "indexer_compressor_kv.weight", (E, 2 * di), "indexer", fan_in_std(E)),
                _g(p + "indexer_compressor_gate.weight", (E, 2 * di), "indexer", fan_in_std(E)),
                _g(p + "indexer_compressor_ape.weight", (2 * di, 4), "indexer", 0.5),
                _f(p + "indexer_compressor_norm.weight", (di,), "norm"),
            ]
    out += [
        _f(p + "ffn_norm.weight", (E,), "norm"),
        _g(p + "ffn_gate_inp.weight", (E, X), "router", fan_in_std(E)),
    ]
    if hashed:
        out.append(_f(p + "ffn_gate_tid2eid.weight", (c.n_expert_used, c.vocab_size), "tid2eid", "I32"))
    else:
        out.append(_f(p + "exp_probs_b.bias", (X,), "router_bias"))
    out += [
        _g(p + "ffn_gate_exps.weight", (E, F, X), "experts", fan_in_std(E)),
        _g(p + "ffn_up_exps.weight", (E, F, X), "experts", fan_in_std(E)),
        _g(p + "ffn_down_exps.weight", (F, E, X), "experts", fan_in_std(F)),
    ]
    if c.n_expert_shared:
        out += [
            _g(p + "ffn_gate_shexp.weight", (E, Fs), "shared", fan_in_std(E)),
            _g(p + "ffn_up_shexp.weight", (E, Fs), "shared", fan_in_std(E)),
            _g(p + "ffn_down_shexp.weight", (Fs, E), "shared", fan_in_std(Fs)),
        ]
    return out


def target_tensors(c: SynthConfig) -> list[Planned]:
    E, V = c.n_embd, c.vocab_size
    out = [
        # embeddings are used unscaled, so unit variance keeps the residual streams O(1)
        _g("token_embd.weight", (E, V), "embed", 1.0),
        _f("output_norm.weight", (E,), "norm"),
        _g("output.weight", (E, V), "output", fan_in_std(E)),
    ] + _hc_head(c)
    for i, r in enumerate(c.ratios):
        out += _block(c, i, r, i < c.hash_layers)
    return out


def drafter_tensors(c: SynthConfig) -> list[Planned]:
    """Three full blocks with ratio 0 and no hash routing, the HC head, and the DSpark extras.
    Token embedding and LM head are the target's, so the drafter carries neither."""
    E, V, R, n_cap = c.n_embd, c.vocab_size, c.draft_markov_rank, len(c.capture_layers)
    out = [_f("output_norm.weight", (E,), "norm")] + _hc_head(c)
    for i in range(c.draft_layers):
        out += _block(c, i, 0, False)
    out += [
        _g("dflash.fc.weight", (n_cap * E, E), "dflash", fan_in_std(n_cap * E)),
        _f("dflash.hidden_norm.weight", (E,), "norm"),
        # W1[prev] is a row lookup (rank values per token); W2 maps rank -> vocab logits
        _g("dflash.dspark.markov.w1", (R, V), "dflash", 1.0),
        _g("dflash.dspark.markov.w2", (R, V), "dflash", fan_in_std(R)),
        _g("dflash.dspark.confidence.weight", (c.confidence_dim, 1), "dflash", fan_in_std(c.confidence_dim)),
        _f("dflash.dspark.confidence.bias", (1,), "zero"),
    ]
    return out
