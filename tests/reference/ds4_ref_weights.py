"""Hyperparameters and float64 weights of a `deepseek4` GGUF for the numpy reference.

`load_weights(path)` reads every hparam from the file's `deepseek4.*` keys and
dequantises every tensor to float64 with gguf-py (`gguf.quants.dequantize`).
Arrays keep gguf-py's numpy order, i.e. the reverse of ggml's `ne`: a matrix with
ne = [in, out] is an (out, in) array, so y = W @ x.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ARCH = "deepseek4"


class ReferenceFormatError(ValueError):
    """The GGUF lacks something the reference needs; the message names it."""


@dataclass
class Hparams:
    n_layer: int
    n_embd: int
    n_vocab: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_rot: int
    q_lora_rank: int
    o_lora_rank: int
    o_groups: int
    n_expert: int
    n_expert_used: int
    n_expert_shared: int
    n_ff_exp: int
    n_hash_layers: int
    expert_weights_scale: float
    expert_weights_norm: bool
    expert_gating_func: int
    n_swa: int
    idx_n_head: int
    idx_head_dim: int
    idx_top_k: int
    n_hc: int
    sinkhorn_iters: int
    hc_eps: float
    rms_eps: float
    rope_freq_base: float
    compress_rope_freq_base: float
    yarn_factor: float
    yarn_beta_fast: float
    yarn_beta_slow: float
    yarn_orig_ctx: int
    swiglu_clamp_exp: list[float] = field(default_factory=list)
    swiglu_clamp_shexp: list[float] = field(default_factory=list)
    compress_ratios: list[int] = field(default_factory=list)


@dataclass
class Weights:
    hp: Hparams
    tensors: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.tensors[name]
        except KeyError:
            raise ReferenceFormatError(f"tensor {name!r} is missing") from None

    def has(self, name: str) -> bool:
        return name in self.tensors


# ------------------------------------------------------------------ GGUF reading

def _field_value(reader, key: str, path: str):
    f = reader.fields.get(key)
    if f is None:
        return None
    v = f.contents()
    return v


def _required(reader, key: str, path: str, arch: str = ARCH):
    v = _field_value(reader, f"{arch}.{key}", path)
    if v is None:
        raise ReferenceFormatError(f"{path}: GGUF key '{arch}.{key}' is missing")
    return v


def _optional(reader, key: str, path: str, default, arch: str = ARCH):
    v = _field_value(reader, f"{arch}.{key}", path)
    return default if v is None else v


def _per_layer(value, n_layer: int, key: str, path: str) -> list[float]:
    """Keys such as swiglu_clamp_exp may be a scalar or a per-layer array."""
    if isinstance(value, (list, tuple)):
        if len(value) < n_layer:
            raise ReferenceFormatError(f"{path}: '{ARCH}.{key}' has {len(value)} entries, need {n_layer}")
        return [float(x) for x in value[:n_layer]]
    return [float(value)] * n_layer


def read_hparams(reader, path: str, arch: str = ARCH) -> Hparams:
    """Model keys under `<arch>.`: the target's (deepseek4) or a DSpark drafter's (deepseek4-dflash-draft)."""
    if _field_value(reader, "general.architecture", path) != arch:
        raise ReferenceFormatError(f"{path}: general.architecture is {_field_value(reader, 'general.architecture', path)!r}, expected {arch!r}")
    n_layer = int(_required(reader, "block_count", path, arch))
    vocab = _field_value(reader, f"{arch}.vocab_size", path)
    if vocab is None:
        toks = reader.fields.get("tokenizer.ggml.tokens")
        if toks is None:
            raise ReferenceFormatError(f"{path}: neither '{arch}.vocab_size' nor tokenizer.ggml.tokens is present")
        vocab = len(toks.data)
    key_len = int(_required(reader, "attention.key_length", path, arch))
    val_len = int(_optional(reader, "attention.value_length", path, arch=arch, default=key_len))
    if val_len != key_len:
        raise ReferenceFormatError(f"{path}: key_length {key_len} != value_length {val_len} (K = V in DS4)")
    ratios = _required(reader, "attention.compress_ratios", path, arch)
    if not isinstance(ratios, (list, tuple)) or len(ratios) < n_layer:
        raise ReferenceFormatError(f"{path}: '{arch}.attention.compress_ratios' must list every layer")
    ratios = [int(r) for r in ratios[:n_layer]]
    for il, r in enumerate(ratios):
        if r not in (0, 4, 128):
            raise ReferenceFormatError(f"{path}: layer {il} has compress ratio {r}; only 0, 4, 128 exist")
    clamp_exp = _per_layer(_required(reader, "swiglu_clamp_exp", path, arch), n_layer, "swiglu_clamp_exp", path)
    clamp_sh = _field_value(reader, f"{arch}.swiglu_clamp_shexp", path)
    # The spec says the shared expert uses 'the same clamped SwiGLU'; llama.cpp reads
    # an optional swiglu_clamp_shexp that defaults to swiglu_clamp_exp.
    clamp_sh = clamp_exp if clamp_sh is None else _per_layer(clamp_sh, n_layer, "swiglu_clamp_shexp", path)
    return Hparams(
        n_layer=n_layer,
        n_embd=int(_required(reader, "embedding_length", path, arch)),
        n_vocab=int(vocab),
        n_head=int(_required(reader, "attention.head_count", path, arch)),
        n_head_kv=int(_optional(reader, "attention.head_count_kv", path, arch=arch, default=1)),
        head_dim=key_len,
        n_rot=int(_required(reader, "rope.dimension_count", path, arch)),
        q_lora_rank=int(_required(reader, "attention.q_lora_rank", path, arch)),
        o_lora_rank=int(_required(reader, "attention.output_lora_rank", path, arch)),
        o_groups=int(_required(reader, "attention.output_group_count", path, arch)),
        n_expert=int(_required(reader, "expert_count", path, arch)),
        n_expert_used=int(_required(reader, "expert_used_count", path, arch)),
        n_expert_shared=int(_optional(reader, "expert_shared_count", path, arch=arch, default=1)),
        n_ff_exp=int(_per_layer(_required(reader, "expert_feed_forward_length", path, arch), n_layer,
                                "expert_feed_forward_length", path)[0]),
        n_hash_layers=int(_required(reader, "hash_layer_count", path, arch)),
        expert_weights_scale=float(_required(reader, "expert_weights_scale", path, arch)),
        expert_weights_norm=bool(_required(reader, "expert_weights_norm", path, arch)),
        expert_gating_func=int(_required(reader, "expert_gating_func", path, arch)),
        n_swa=int(_required(reader, "attention.sliding_window", path, arch)),
        idx_n_head=int(_required(reader, "attention.indexer.head_count", path, arch)),
        idx_head_dim=int(_required(reader, "attention.indexer.key_length", path, arch)),
        idx_top_k=int(_required(reader, "attention.indexer.top_k", path, arch)),
        n_hc=int(_required(reader, "hyper_connection.count", path, arch)),
        sinkhorn_iters=int(_required(reader, "hyper_connection.sinkhorn_iterations", path, arch)),
        hc_eps=float(_required(reader, "hyper_connection.epsilon", path, arch)),
        rms_eps=float(_required(reader, "attention.layer_norm_rms_epsilon", path, arch)),
        rope_freq_base=float(_required(reader, "rope.freq_base", path, arch)),
        compress_rope_freq_base=float(_required(reader, "attention.compress_rope_freq_base", path, arch)),
        yarn_factor=float(_optional(reader, "rope.scaling.factor", path, arch=arch, default=1.0)),
        yarn_beta_fast=float(_optional(reader, "rope.scaling.yarn_beta_fast", path, arch=arch, default=32.0)),
        yarn_beta_slow=float(_optional(reader, "rope.scaling.yarn_beta_slow", path, arch=arch, default=1.0)),
        yarn_orig_ctx=int(_optional(reader, "rope.scaling.original_context_length", path, arch=arch,
                                    default=_optional(reader, "context_length", path, arch=arch, default=0))),
        swiglu_clamp_exp=clamp_exp,
        swiglu_clamp_shexp=clamp_sh,
        compress_ratios=ratios,
    )


def load_weights(path, arch: str = ARCH) -> Weights:
    """Read a deepseek4 (or, arch given, a DSpark drafter) GGUF: hparams from its keys, every tensor dequantised to float64."""
    import gguf
    from gguf.quants import dequantize

    path = str(path)
    try:
        reader = gguf.GGUFReader(path)
    except ValueError as exc:
        if "GGMLQuantizationType" in str(exc):
            # gguf-py stops at the first tensor of a type it does not know (e.g. ROCmFP 100-107).
            raise ReferenceFormatError(f"{path}: a tensor has a type gguf-py cannot read ({exc}); the "
                                       f"reference supports standard ggml types only") from exc
        raise ReferenceFormatError(f"{path}: not a readable GGUF ({exc})") from exc
    except Exception as exc:  # gguf-py raises assorted errors on bad files
        raise ReferenceFormatError(f"{path}: not a readable GGUF ({exc})") from exc
    hp = read_hparams(reader, path, arch)
    tensors: dict[str, np.ndarray] = {}
    for t in reader.tensors:
        qtype = gguf.GGMLQuantizationType(int(t.tensor_type))
        if qtype == gguf.GGMLQuantizationType.I32:
            arr = np.asarray(t.data, dtype=np.int64)
        else:
            try:
                arr = dequantize(t.data, qtype)
            except NotImplementedError as exc:
                raise ReferenceFormatError(f"{path}: tensor {t.name!r} has type {qtype.name} "
                                           f"that gguf-py cannot dequantise") from exc
            arr = np.asarray(arr, dtype=np.float64)
        # gguf-py's shape is ne (innermost first); numpy order is its reverse.
        shape = tuple(int(d) for d in reversed(list(t.shape)))
        tensors[t.name] = arr.reshape(shape)
    return Weights(hp=hp, tensors=tensors)
