"""Presets and config validation (no files written)."""
from __future__ import annotations

import pytest

from ds4kit.synth import PRESETS, SynthConfig, parse_override, preset
from ds4kit.synth.build import planned_bytes


@pytest.mark.parametrize("name", ["tiny", "small", "medium", "demo", "full"])
def test_presets_are_valid_and_llama_compatible(name):
    cfg = preset(name)
    assert cfg.validate() == []
    assert len(cfg.ratios) == cfg.n_layer and cfg.indexer_dim == 128 and cfg.vocab_size == 129280


def test_tiny_covers_every_layer_kind():
    cfg = preset("tiny")
    kinds = {(r, i < cfg.hash_layers) for i, r in enumerate(cfg.ratios)}
    assert {r for r, _ in kinds} == {0, 4, 128}
    assert {h for _, h in kinds} == {True, False}
    assert planned_bytes(cfg) < 40e6  # small enough for every test session


def test_medium_is_big_enough_for_cpu_benchmarks():
    assert planned_bytes(preset("medium")) >= 200e6


def test_full_preset_has_the_real_dimensions():
    c = PRESETS["full"]
    assert (c.n_layer, c.n_embd, c.n_head, c.head_dim, c.n_expert, c.n_expert_used) == (43, 4096, 64, 512, 256, 6)
    assert c.ratios[:4] == (0, 0, 4, 128) and c.ratios[-1] == 4 and c.confidence_dim == 4352


@pytest.mark.parametrize("changes, message", [
    ({"compress_ratios": (0, 0, 3, 4, 4)}, "may only hold 0, 4 or 128"),
    ({"compress_ratios": (0, 4)}, "2 entries for 5 layers"),
    ({"n_rot": 15}, "must be even"),
    ({"n_head": 3}, "multiple of o_groups"),
    ({"n_expert_used": 9}, "n_expert_used (9) > n_expert (8)"),
    ({"n_head_kv": 2}, "n_head_kv must be 1"),
    ({"draft_capture_layers": (7,)}, "draft_capture_layers"),
    ({"expert_ff": 0}, "expert_ff must be positive"),
])
def test_impossible_configs_are_rejected_by_name(changes, message):
    with pytest.raises(ValueError, match="invalid synthetic model config") as info:
        preset("tiny").replace(**changes).validate()
    assert message in str(info.value)


def test_llama_incompatible_configs_warn():
    warns = preset("tiny").replace(indexer_dim=64, hc_count=3, vocab_size=1000).validate()
    assert any("indexer_dim 64" in w for w in warns) and any("hc_count 3" in w for w in warns)
    assert any("shape-only" in w for w in warns)
    # indexer dim only matters when a ratio-4 layer exists
    assert preset("tiny").replace(compress_ratios=(0, 0, 128, 128, 0), indexer_dim=64).validate() == []


def test_parse_override_converts_types():
    c = parse_override(preset("tiny"), "compress_ratios", "0,4,128")
    c = parse_override(c, "n_layer", "3")
    c = parse_override(c, "rms_eps", "1e-5")
    c = parse_override(c, "draft_head_hc", "false")
    assert (c.ratios, c.n_layer, c.rms_eps, c.draft_head_hc) == ((0, 4, 128), 3, 1e-5, False)
    with pytest.raises(ValueError, match="bad value for n_layer"):
        parse_override(c, "n_layer", "three")
    assert isinstance(c, SynthConfig)
