"""Write a synthetic `deepseek4` target GGUF and a `deepseek4-dflash-draft` drafter GGUF."""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path


from ds4kit.synth import gguf_out as G
from ds4kit.synth.config import SynthConfig, resolve_types
from ds4kit.synth.layout import Planned, drafter_tensors, target_tensors
from ds4kit.synth.tokenizer_meta import load_tokenizer_meta
from ds4kit.synth.weights import tensor_bytes, tensor_type

TARGET_ARCH = "deepseek4"
DRAFTER_ARCH = "deepseek4-dflash-draft"
PROGRESS_MIN_BYTES = 64 << 20  # show a progress bar for files larger than this


@dataclass
class Written:
    path: str
    architecture: str
    size_bytes: int
    sha256: str
    n_tensors: int
    quant_mix: dict[str, int]           # type name -> number of tensors
    bytes_by_type: dict[str, int]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _model_kvs(arch: str, c: SynthConfig, *, n_layer: int, ratios: tuple[int, ...], hash_layers: int,
               per_layer_clamp: bool) -> list[G.KV]:
    """Section-1 keys, typed as llama.cpp 0.3.36's loader demands (u32 counts, f32 reals, bool norm flag).

    Beyond ds4-model.md's table, llama.cpp requires `context_length` and reads the YaRN setup from
    `rope.scaling.type` = "yarn" + `rope.scaling.factor` / `original_context_length`; it takes
    `swiglu_clamp_exp` as a scalar or per-layer array and `swiglu_clamp_shexp` optionally (written,
    equal, as its converter does). It never reads yarn_beta_fast/slow from the file (its
    defaults are the real 32/1); we write them for engines that do (Lucebox)."""
    p = arch + "."
    kvs = [
        G.u32(p + "context_length", c.context_length),
        G.u32(p + "embedding_length", c.n_embd),
        G.u32(p + "block_count", n_layer),
        G.u32(p + "vocab_size", c.vocab_size),
        G.u32(p + "attention.head_count", c.n_head),
        G.u32(p + "attention.head_count_kv", c.n_head_kv),
        G.u32(p + "attention.key_length", c.head_dim),
        G.u32(p + "attention.value_length", c.head_dim),
        G.u32(p + "rope.dimension_count", c.n_rot),
        G.u32(p + "attention.q_lora_rank", c.q_lora_rank),
        G.u32(p + "attention.output_lora_rank", c.o_lora_rank),
        G.u32(p + "attention.output_group_count", c.o_groups),
        G.u32(p + "expert_count", c.n_expert),
        G.u32(p + "expert_used_count", c.n_expert_used),
        G.u32(p + "expert_shared_count", c.n_expert_shared),
        G.u32(p + "expert_feed_forward_length", c.expert_ff),
        G.u32(p + "hash_layer_count", hash_layers),
        G.f32(p + "expert_weights_scale", c.routed_scale),
        G.boolean(p + "expert_weights_norm", c.expert_weights_norm),
        G.u32(p + "expert_gating_func", c.gating_func),
        G.u32(p + "attention.sliding_window", c.swa_window),
        G.u32(p + "attention.indexer.head_count", c.indexer_heads),
        G.u32(p + "attention.indexer.key_length", c.indexer_dim),
        G.u32(p + "attention.indexer.top_k", c.indexer_top_k),
        G.u32(p + "hyper_connection.count", c.hc_count),
        G.u32(p + "hyper_connection.sinkhorn_iterations", c.hc_iters),
        G.f32(p + "hyper_connection.epsilon", c.hc_eps),
        G.f32(p + "attention.layer_norm_rms_epsilon", c.rms_eps),
        G.f32(p + "rope.freq_base", c.rope_base),
        G.f32(p + "attention.compress_rope_freq_base", c.compress_rope_base),
        G.string(p + "rope.scaling.type", "yarn"),
        G.f32(p + "rope.scaling.factor", c.yarn_factor),
        G.u32(p + "rope.scaling.original_context_length", c.yarn_orig_ctx),
        G.f32(p + "rope.scaling.yarn_beta_fast", c.yarn_beta_fast),
        G.f32(p + "rope.scaling.yarn_beta_slow", c.yarn_beta_slow),
        G.array(p + "attention.compress_ratios", G.T_UINT32, list(ratios)),
    ]
    if per_layer_clamp:  # llama.cpp reads a scalar or a per-layer array; its converter writes arrays
        kvs.append(G.array(p + "swiglu_clamp_exp", G.T_FLOAT32, [c.swiglu_clamp] * n_layer))
        kvs.append(G.array(p + "swiglu_clamp_shexp", G.T_FLOAT32, [c.swiglu_clamp] * n_layer))
        kvs.append(G.u32(p + "embedding_length_out", c.hc_count * c.n_embd))  # as llama.cpp's converter
    else:  # Lucebox's drafter loader reads a FLOAT32 scalar only (an array falls back to its default)
        kvs.append(G.f32(p + "swiglu_clamp_exp", c.swiglu_clamp))
    return kvs


def _provenance(c: SynthConfig, seed: int, types: dict[str, str]) -> list[G.KV]:
    return [
        G.string("ds4kit.synth.preset", c.name),
        G.u32("ds4kit.synth.seed", seed),
        G.string("ds4kit.synth.types", ",".join(f"{k}={v}" for k, v in sorted(types.items()))),
    ]


def _tokenizer_kvs() -> list[G.KV]:
    tok = load_tokenizer_meta()
    return [
        G.string("tokenizer.ggml.model", "gpt2"),
        G.string("tokenizer.ggml.pre", "joyai-llm"),
        G.array("tokenizer.ggml.tokens", G.T_STRING, list(tok.tokens)),
        G.array("tokenizer.ggml.token_type", G.T_INT32, list(tok.token_types)),
        G.array("tokenizer.ggml.merges", G.T_STRING, list(tok.merges)),
        G.u32("tokenizer.ggml.bos_token_id", tok.bos_id),
        G.u32("tokenizer.ggml.eos_token_id", tok.eos_id),
        G.u32("tokenizer.ggml.padding_token_id", tok.eos_id),  # tokenizer_config.json: pad = EOS
        # false in the shipped tokenizer_config.json: the chat template writes BOS itself
        G.boolean("tokenizer.ggml.add_bos_token", tok.add_bos),
        G.boolean("tokenizer.ggml.add_eos_token", tok.add_eos),
    ]


def _write(path: str | Path, arch: str, kvs: list[G.KV], plan: list[Planned], cfg: SynthConfig,
           types: dict[str, str], seed: int, warnings: list[str], progress: bool | None,
           label: str, jobs: int = 1) -> Written:
    specs, qts = [], {}
    for t in plan:
        qt = tensor_type(t, types)
        qts[t.name] = qt
        specs.append(G.TensorSpec(t.name, t.shape, qt.type_id, qt.nbytes(t.shape, what=f"{t.name} ({t.group or 'fixed'} group)")))
    by_name = {t.name: t for t in plan}
    total = sum(s.nbytes for s in specs)
    show = progress if progress is not None else total >= PROGRESS_MIN_BYTES
    bar = None
    if show:
        from tqdm import tqdm
        bar = tqdm(total=total, unit="B", unit_scale=True, desc=label, leave=False)

    def produce(s: G.TensorSpec) -> bytes:
        return tensor_bytes(by_name[s.name], qts[s.name], cfg, seed)

    try:
        G.write_gguf(path, kvs, specs, produce, on_tensor=(lambda s: bar.update(s.nbytes)) if bar else None,
                     workers=jobs)
    finally:
        if bar is not None:
            bar.close()
    mix = Counter(qts[t.name].name for t in plan)
    by_type: Counter[str] = Counter()
    for s in specs:
        by_type[qts[s.name].name] += s.nbytes
    p = Path(path)
    return Written(str(p), arch, p.stat().st_size, sha256_file(p), len(specs), dict(sorted(mix.items())),
                   dict(sorted(by_type.items())), warnings)


def planned_bytes(cfg: SynthConfig, types: dict[str, str] | None = None, *, drafter: bool = False) -> int:
    """Tensor bytes a file will hold; raises ValueError naming the tensor when a type does not fit its rows."""
    tmap = resolve_types(types)
    plan = drafter_tensors(cfg) if drafter else target_tensors(cfg)
    return sum(tensor_type(t, tmap).nbytes(t.shape, what=f"{t.name} ({t.group or 'fixed'} group)") for t in plan)


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def write_target(path: str | Path, cfg: SynthConfig, *, seed: int = 0, types: dict[str, str] | None = None,
                 progress: bool | None = None, jobs: int = 1) -> Written:
    warnings = cfg.validate()
    tmap = resolve_types(types)
    kvs = ([G.string("general.architecture", TARGET_ARCH), G.string("general.name", f"ds4kit-synth-{cfg.name}")]
           + _model_kvs(TARGET_ARCH, cfg, n_layer=cfg.n_layer, ratios=cfg.ratios, hash_layers=cfg.hash_layers,
                        per_layer_clamp=True)
           + (_tokenizer_kvs() if cfg.has_real_vocab else []) + _provenance(cfg, seed, tmap))
    rocm = sorted({v for v in tmap.values() if v.endswith(("ROCMFP4", "ROCMFP4_FAST", "ROCMFPX", "ROCMFP2"))})
    if rocm:
        warnings.append(f"ROCmFP types {rocm} are Lucebox-only: llama.cpp cannot load this file")
    return _write(path, TARGET_ARCH, kvs, target_tensors(cfg), cfg, tmap, seed, warnings, progress, "target", jobs)


def write_drafter(path: str | Path, cfg: SynthConfig, *, seed: int = 0, types: dict[str, str] | None = None,
                  progress: bool | None = None, jobs: int = 1) -> Written:
    """DSpark drafter (ds4-model.md section 6). Its seed stream is separate from the target's."""
    warnings = cfg.validate()
    tmap = resolve_types(types)
    a = DRAFTER_ARCH + "."
    kvs = ([G.string("general.architecture", DRAFTER_ARCH), G.string("general.name", f"ds4kit-synth-{cfg.name}-dspark")]
           + _model_kvs(DRAFTER_ARCH, cfg, n_layer=cfg.draft_layers, ratios=(0,) * cfg.draft_layers,
                        hash_layers=0, per_layer_clamp=False)
           + [
               G.u32(a + "dflash.n_target_layers", len(cfg.capture_layers)),
               G.u32(a + "dflash.block_size", cfg.draft_block_size),
               G.u32(a + "dflash.mask_token_id", cfg.draft_mask_token_id),
               G.u32(a + "dflash.head_hc_enabled", int(cfg.draft_head_hc)),
               G.array(a + "dflash.capture_layer_ids", G.T_INT32, list(cfg.capture_layers)),
               G.u32(a + "dflash.dspark.enabled", 1),
               G.u32(a + "dflash.dspark.markov_rank", cfg.draft_markov_rank),
               G.u32(a + "dflash.dspark.vocab_size", cfg.vocab_size),
               G.u32(a + "dflash.dspark.confidence_dim", cfg.confidence_dim),
           ]
           + _provenance(cfg, seed, tmap))
    # distinct seed stream: same tensor names as the target's blocks must not get the same values
    return _write(path, DRAFTER_ARCH, kvs, drafter_tensors(cfg), cfg, tmap, seed ^ 0x5EED_D5A7, warnings,
                  progress, "drafter", jobs)
