"""Three tiny synthetic configurations (ds4kit.synth) for engine-vs-reference tests that
together cover what issue 3 item 6a asks: every compression ratio, hash and biased
routing, indexer selection active with a context well beyond top_k x 4, raw-ring
wrap-around, and contexts of 600+ tokens. `coverage()` states what one (config, prompt
length) pair exercises, so a changed preset cannot silently drop a case.

Every config keeps a ratio-4 and a ratio-128 layer (llama.cpp 0.3.36 dies with SIGFPE
otherwise) and indexer key_length 128 (llama.cpp's requirement)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineCase:
    name: str
    overrides: dict          # SynthConfig.replace(**overrides) on the "tiny" preset
    n_tokens: int
    seed: int = 1


ENGINE_CASES = (
    # The synth tiny preset as is: window 16 (wraps 40 times), top_k 2, hash layers 0-2. Its 2
    # indexer heads leave many indexer scores exactly 0 (ReLU), so it also checks that the engine
    # breaks top-k ties like D (lower index first); for llama.cpp comparisons use the other two.
    EngineCase("tiny", {}, n_tokens=640),
    # The real window (128), a larger top_k, 8 indexer heads (2 heads give many exact-zero
    # indexer scores, i.e. ties llama.cpp breaks arbitrarily); one hash layer, other ratio order.
    EngineCase("window128", {"n_layer": 6, "swa_window": 128, "indexer_top_k": 16, "indexer_heads": 8,
                             "hash_layers": 1, "compress_ratios": (0, 4, 128, 4, 128, 0)}, n_tokens=700),
    # The real head geometry ratio (head_dim 128, 64 RoPE dims: whole FP8 blocks of 64), 8 indexer heads.
    EngineCase("heads128", {"n_layer": 6, "head_dim": 128, "n_rot": 64, "indexer_heads": 8, "indexer_top_k": 4,
                            "hash_layers": 2, "compress_ratios": (0, 0, 4, 128, 4, 128)}, n_tokens=620),
)


def config_of(case: EngineCase):
    from ds4kit.synth.config import preset
    return preset("tiny").replace(**case.overrides)


def coverage(cfg, n_tokens: int) -> set[str]:
    """What a prompt of n_tokens exercises on cfg (a ds4kit.synth SynthConfig)."""
    ratios = tuple(cfg.ratios)
    got = {f"ratio-{r}" for r in set(ratios)}
    if cfg.hash_layers > 0:
        got.add("hash-routing")
    if cfg.hash_layers < cfg.n_layer:
        got.add("biased-routing")
    if 4 in ratios and n_tokens // 4 >= 4 * cfg.indexer_top_k:
        got.add("indexer-selection")          # n_c reaches 4x top_k: selection is active and wide
    if 128 in ratios and n_tokens >= 2 * 128:
        got.add("ratio-128-rows")             # at least two completed 128-token rows
    if n_tokens > 2 * cfg.swa_window:
        got.add("ring-wrap")
    if n_tokens >= 600:
        got.add("600+-tokens")
    return got


REQUIRED = {"ratio-0", "ratio-4", "ratio-128", "hash-routing", "biased-routing", "indexer-selection",
            "ratio-128-rows", "ring-wrap", "600+-tokens"}
