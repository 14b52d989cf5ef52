"""Tiny deepseek4 models for the engine tests, built once per test process.

Two independent sources, so the engine is not tested only on one writer's layout:
- `synth_tiny_path()`: ds4kit.synth's "tiny" preset (real 129280-token vocab, Q8_0/Q4_0/F16
  mix, ratios 0,0,4,128,4, window 16, indexer top_k 2, n_rot 16 of head_dim 64).
- `ref_tiny_path()`: the numpy reference's own tiny weight set (ds4_ref_tiny, vocab 97,
  ratios 0,4,128, head_dim 128, top_k 3) written with the reference's gguf-py writer
  (F16 matrices, F32 vectors).
Reference weights (float64, gguf-py dequantised) are cached alongside.
"""
from __future__ import annotations

import functools
import sys
import tempfile
from pathlib import Path

import numpy as np

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference"
if str(REFERENCE_DIR) not in sys.path:
    sys.path.insert(0, str(REFERENCE_DIR))

_TMP = Path(tempfile.mkdtemp(prefix="ds4kit-engine-tests-"))


@functools.lru_cache(maxsize=None)
def synth_tiny_path() -> Path:
    from ds4kit.synth import preset, write_target

    path = _TMP / "synth-tiny.gguf"
    write_target(path, preset("tiny"), seed=3)
    return path


def ref_tiny_weights(**over):
    from ds4_ref_tiny import tiny_weights

    return tiny_weights(seed=5, **over)


def write_ref_gguf(weights, path: Path, f16: bool = True) -> Path:
    """Writes a reference weight set; matrices as F16 (vectors stay F32, as llama.cpp wants)."""
    import gguf
    from ds4_ref_gguf_writer import write_gguf

    qtypes = {}
    if f16:
        qtypes = {name: gguf.GGMLQuantizationType.F16 for name, a in weights.tensors.items() if a.ndim >= 2}
    write_gguf(weights, path, qtypes=qtypes)
    return path


@functools.lru_cache(maxsize=None)
def ref_tiny_path() -> Path:
    return write_ref_gguf(ref_tiny_weights(), _TMP / "ref-tiny.gguf")


@functools.lru_cache(maxsize=None)
def reference_weights(path: Path):
    from ds4_numpy_reference import load_weights

    return load_weights(path)


def tokens(n: int, vocab: int, seed: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(0, vocab, n)]


def tmp_dir() -> Path:
    return _TMP


# Vocabulary of the engine-case files: shape-only (no tokenizer), small so the float64
# reference's LM head and gguf-py's loading stay fast; the structure is what is tested.
CASE_VOCAB = 1024


@functools.lru_cache(maxsize=None)
def engine_case_path(name: str) -> Path:
    """One of the reference's three engine-test configurations (tests/reference/
    ds4_ref_engine_configs.py) written by ds4kit.synth with its default quant mix."""
    from ds4_ref_engine_configs import ENGINE_CASES, config_of
    from ds4kit.synth import write_target

    case = next(c for c in ENGINE_CASES if c.name == name)
    path = _TMP / f"case-{name}.gguf"
    write_target(path, config_of(case).replace(vocab_size=CASE_VOCAB), seed=case.seed)
    return path
