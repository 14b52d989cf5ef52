"""Synthetic model files shared by the synth tests, written once per session."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ds4kit.synth import SynthConfig, Written, preset, write_drafter, write_target


@dataclass
class SynthFiles:
    cfg: SynthConfig
    seed: int
    target: Written
    drafter: Written


@pytest.fixture(scope="session")
def synth_tiny_files(tmp_path_factory) -> SynthFiles:
    """The `tiny` preset target and drafter, seed 0, default types."""
    d: Path = tmp_path_factory.mktemp("synth_tiny")
    cfg = preset("tiny")
    return SynthFiles(cfg, 0, write_target(d / "tiny.gguf", cfg, seed=0),
                      write_drafter(d / "tiny-dspark.gguf", cfg, seed=0))


# Every row length a multiple of 256, so every group accepts every type (K/IQ blocks are 256 wide);
# a small vocab keeps these shape-only files (no tokenizer) to a few MB.
BLOCK256 = SynthConfig(name="block256", n_layer=3, compress_ratios=(0, 4, 128), hash_layers=1, n_embd=256,
                       vocab_size=512, n_head=2, head_dim=256, n_rot=64, q_lora_rank=256, o_lora_rank=128,
                       o_groups=2, n_expert=4, n_expert_used=2, expert_ff=256, indexer_heads=2,
                       indexer_top_k=4, swa_window=16, draft_layers=1, draft_markov_rank=256,
                       draft_capture_layers=(1, 2))
