"""Dimensions of a synthetic DeepSeek V4 Flash model (ds4-model.md section 1) and presets.

Dataclass defaults are the real model's values; presets shrink them while keeping
the structure (hash-routed layers, ratio 0 / 4 / 128 layers, MoE, 4 HC streams).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

REAL_VOCAB = 129280
GATING_SQRT_SOFTPLUS = 4  # llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SQRT_SOFTPLUS
LLAMA_INDEXER_DIM = 128   # llama.cpp's Hadamard rotation of the indexer cache needs 128


def default_ratios(n_layer: int) -> tuple[int, ...]:
    """0, 0, then 4 on even and 128 on odd layers (the real model's pattern)."""
    return tuple(0 if i < 2 else (4 if i % 2 == 0 else 128) for i in range(n_layer))


@dataclass(frozen=True)
class SynthConfig:
    name: str = "custom"
    n_layer: int = 43
    n_embd: int = 4096
    vocab_size: int = REAL_VOCAB
    n_head: int = 64
    n_head_kv: int = 1
    head_dim: int = 512
    n_rot: int = 64
    q_lora_rank: int = 1024
    o_lora_rank: int = 1024
    o_groups: int = 8
    n_expert: int = 256
    n_expert_used: int = 6
    n_expert_shared: int = 1
    expert_ff: int = 2048
    hash_layers: int = 3
    swa_window: int = 128
    indexer_heads: int = 64
    indexer_dim: int = 128
    indexer_top_k: int = 512
    hc_count: int = 4
    hc_iters: int = 20
    hc_eps: float = 1e-6
    rms_eps: float = 1e-6
    rope_base: float = 10000.0
    compress_rope_base: float = 160000.0
    yarn_factor: float = 16.0
    yarn_beta_fast: float = 32.0
    yarn_beta_slow: float = 1.0
    yarn_orig_ctx: int = 65536
    context_length: int = 1048576
    swiglu_clamp: float = 10.0
    compress_ratios: tuple[int, ...] = ()  # empty: default_ratios(n_layer)
    routed_scale: float = 1.5
    expert_weights_norm: bool = True
    gating_func: int = GATING_SQRT_SOFTPLUS
    # DSpark drafter (ds4-model.md section 6)
    draft_layers: int = 3
    draft_block_size: int = 5
    draft_mask_token_id: int = 128799
    draft_markov_rank: int = 256
    draft_capture_layers: tuple[int, ...] = ()  # empty: the target's last draft_layers layers
    draft_head_hc: bool = True

    # ---- derived ---------------------------------------------------------------------------
    @property
    def ratios(self) -> tuple[int, ...]:
        return tuple(self.compress_ratios) if self.compress_ratios else default_ratios(self.n_layer)

    @property
    def capture_layers(self) -> tuple[int, ...]:
        if self.draft_capture_layers:
            return tuple(self.draft_capture_layers)
        return tuple(range(max(0, self.n_layer - self.draft_layers), self.n_layer))

    @property
    def has_real_vocab(self) -> bool:
        return self.vocab_size == REAL_VOCAB

    @property
    def confidence_dim(self) -> int:
        # confidence = sigmoid(w . [h_pre; W1[prev]] + b): n_embd + markov_rank (4096 + 256 = 4352 in L)
        return self.n_embd + self.draft_markov_rank

    def replace(self, **changes) -> "SynthConfig":
        return dataclasses.replace(self, **changes)

    def validate(self) -> list[str]:
        """Raise ValueError on an impossible config; return warnings (llama.cpp incompatibilities)."""
        errs: list[str] = []
        pos = ["n_layer", "n_embd", "n_head", "head_dim", "n_rot", "q_lora_rank", "o_lora_rank", "o_groups",
               "n_expert", "n_expert_used", "expert_ff", "swa_window", "indexer_heads", "indexer_dim",
               "indexer_top_k", "hc_count", "hc_iters", "draft_layers", "draft_block_size", "draft_markov_rank"]
        errs += [f"{k} must be positive (got {getattr(self, k)})" for k in pos if getattr(self, k) <= 0]
        if len(self.ratios) != self.n_layer:
            errs.append(f"compress_ratios has {len(self.ratios)} entries for {self.n_layer} layers")
        bad = sorted({r for r in self.ratios if r not in (0, 4, 128)})
        if bad:
            errs.append(f"compress_ratios may only hold 0, 4 or 128 (got {bad})")
        if self.n_rot % 2 or self.n_rot > self.head_dim:
            errs.append(f"n_rot ({self.n_rot}) must be even and <= head_dim ({self.head_dim})")
        if 4 in self.ratios and self.n_rot > self.indexer_dim:
            errs.append(f"n_rot ({self.n_rot}) must be <= indexer_dim ({self.indexer_dim}): the indexer ropes its last n_rot dims")
        if self.n_head % self.o_groups:
            errs.append(f"n_head ({self.n_head}) must be a multiple of o_groups ({self.o_groups})")
        if self.n_head_kv != 1:
            errs.append("n_head_kv must be 1 (one shared latent, K = V)")
        if self.n_expert_used > self.n_expert:
            errs.append(f"n_expert_used ({self.n_expert_used}) > n_expert ({self.n_expert})")
        if not 0 <= self.hash_layers <= self.n_layer:
            errs.append(f"hash_layers ({self.hash_layers}) must be within 0..n_layer")
        if self.n_expert_shared < 0:
            errs.append("n_expert_shared must be >= 0")
        if any(not 0 <= c < self.n_layer for c in self.capture_layers):
            errs.append(f"draft_capture_layers {self.capture_layers} must be target layers 0..{self.n_layer - 1}")
        if self.has_real_vocab and not 0 <= self.draft_mask_token_id < self.vocab_size:
            errs.append(f"draft_mask_token_id {self.draft_mask_token_id} is outside the vocabulary")
        if errs:
            raise ValueError("invalid synthetic model config: " + "; ".join(errs))
        warns = []
        if not self.has_real_vocab:
            warns.append(f"vocab_size {self.vocab_size} != {REAL_VOCAB}: a shape-only file without tokenizer "
                         "metadata (fast format tests); llama.cpp cannot load it")
        if 4 in self.ratios and self.indexer_dim != LLAMA_INDEXER_DIM:
            warns.append(f"indexer_dim {self.indexer_dim} != 128: llama.cpp 0.3.36 cannot run this file")
        if self.hc_count != 4:
            warns.append(f"hc_count {self.hc_count} != 4: llama.cpp 0.3.36 asserts 4 streams")
        if self.gating_func != GATING_SQRT_SOFTPLUS:
            warns.append(f"gating_func {self.gating_func} != 4 (sqrt-softplus): llama.cpp refuses the file")
        return warns


PRESETS: dict[str, SynthConfig] = {
    # a few layers covering ratios 0, 4 and 128 and both routings; n_embd small because the
    # 129280-row embedding dominates the file
    "tiny": SynthConfig(name="tiny", n_layer=5, n_embd=64, n_head=4, head_dim=64, n_rot=16, q_lora_rank=64,
                        o_lora_rank=32, o_groups=2, n_expert=8, n_expert_used=2, expert_ff=64, hash_layers=3,
                        swa_window=16, indexer_heads=2, indexer_top_k=2, draft_markov_rank=16),
    "small": SynthConfig(name="small", n_layer=8, n_embd=256, n_head=8, head_dim=128, n_rot=32, q_lora_rank=128,
                         o_lora_rank=64, o_groups=4, n_expert=16, n_expert_used=4, expert_ff=256, hash_layers=3,
                         indexer_heads=4, indexer_top_k=16, draft_markov_rank=64),
    # >= 200 MB so CPU benchmarks measure memory traffic, not cache hits
    "medium": SynthConfig(name="medium", n_layer=12, n_embd=512, n_head=16, head_dim=256, n_rot=64,
                          q_lora_rank=256, o_lora_rank=128, o_groups=4, n_expert=32, n_expert_used=6,
                          expert_ff=512, hash_layers=3, indexer_heads=8, indexer_top_k=64, draft_markov_rank=128),
    # the built-in model the README's main command runs
    "demo": SynthConfig(name="demo", n_layer=6, n_embd=128, n_head=4, head_dim=128, n_rot=32, q_lora_rank=128,
                        o_lora_rank=64, o_groups=2, n_expert=8, n_expert_used=2, expert_ff=128, hash_layers=3,
                        indexer_heads=2, indexer_top_k=8, draft_markov_rank=32),
    "full": SynthConfig(name="full"),  # the real dimensions: about 153 GiB with the default types
}

# Tensor groups whose type can be chosen (norms, biases, sinks, HC scale/base and tid2eid
# always stay F32/I32 because llama.cpp applies them with element-wise ops).
GROUPS = ("embed", "output", "attn", "attn_out", "compressor", "indexer", "router", "shared", "experts",
          "hc", "dflash")

DEFAULT_TYPES: dict[str, str] = {
    "embed": "F16", "output": "Q8_0", "attn": "Q8_0", "attn_out": "Q8_0", "compressor": "F16",
    "indexer": "F16", "router": "F16", "shared": "Q8_0", "experts": "Q4_0", "hc": "F16", "dflash": "F16",
}


def preset(name: str) -> SynthConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    return PRESETS[name]


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(SynthConfig) if f.name != "name"]


def parse_override(cfg: SynthConfig, key: str, value: str) -> SynthConfig:
    """Apply one KEY=VALUE override, converting VALUE to the field's type."""
    fields = {f.name: f for f in dataclasses.fields(SynthConfig)}
    if key not in fields or key == "name":
        raise ValueError(f"unknown config field {key!r}; fields: {', '.join(field_names())}")
    cur = getattr(cfg, key)
    try:
        if isinstance(cur, bool):
            v: object = value.strip().lower() in ("1", "true", "yes", "on")
        elif isinstance(cur, int):
            v = int(value)
        elif isinstance(cur, float):
            v = float(value)
        elif isinstance(cur, tuple):
            v = tuple(int(x) for x in value.replace(" ", "").split(",") if x)
        else:
            v = value
    except ValueError as exc:
        raise ValueError(f"bad value for {key}: {value!r} ({exc})") from None
    return cfg.replace(**{key: v})


def resolve_types(overrides: dict[str, str] | None = None) -> dict[str, str]:
    from ds4kit.synth.qtypes import lookup

    types = dict(DEFAULT_TYPES)
    for group, tname in (overrides or {}).items():
        if group not in GROUPS:
            raise ValueError(f"unknown tensor group {group!r}; groups: {', '.join(GROUPS)}")
        types[group] = lookup(tname).name
    return types


__all__ = ["SynthConfig", "PRESETS", "GROUPS", "DEFAULT_TYPES", "preset", "parse_override", "resolve_types",
           "default_ratios", "field_names", "REAL_VOCAB"]
