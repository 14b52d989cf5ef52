"""Synthetic DeepSeek V4 Flash GGUF models (`deepseek4` targets and DSpark drafters).

    from ds4kit.synth import preset, write_target, write_drafter, demo_model_path
    write_target("tiny.gguf", preset("tiny"), seed=0, types={"experts": "Q4_K"})

Files are deterministic from (config, types, seed) and carry the real tokenizer.
"""
from ds4kit.synth.build import DRAFTER_ARCH, TARGET_ARCH, Written, sha256_file, write_drafter, write_target
from ds4kit.synth.config import DEFAULT_TYPES, GROUPS, PRESETS, SynthConfig, parse_override, preset, resolve_types
from ds4kit.synth.demo import cache_dir, demo_model_path

__all__ = [
    "DEFAULT_TYPES", "DRAFTER_ARCH", "GROUPS", "PRESETS", "SynthConfig", "TARGET_ARCH", "Written", "cache_dir",
    "demo_model_path", "parse_override", "preset", "resolve_types", "sha256_file", "write_drafter", "write_target",
]
