"""The whole forward gives the same logits, bit for bit, at every CPU dispatch level
(DS4KIT_CPU_FEATURES=scalar, avx2 and the default, AVX-512 where the CPU has it): the
portable kernels follow the SIMD kernels' canonical reduction order (quant_dot.h,
attn_kernels.h). Each level runs in its own process (the level is fixed per process);
batched and exact prefill, verify and decode logits are compared byte for byte.

Two models: the synth tiny preset (F16 / Q8_0 / Q4_0, every compression ratio) and a
variant with 256-wide rows carrying the K-quants, IQ2_XXS, MXFP4, BF16 and ROCmFP types."""
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine_fixtures import synth_tiny_path, tmp_dir

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
N_TOKENS = 300  # past two ratio-128 boundaries and many ring wraps of the 16-token window
LEVELS = ("scalar", "avx2", "default")
MIXED_TYPES = {"experts": "Q4_K", "shared": "Q2_K", "embed": "IQ2_XXS", "output": "MXFP4", "router": "BF16",
               "attn": "Q8_0_ROCMFPX", "attn_out": "Q4_0_ROCMFP4"}


def _mixed_types_path() -> Path:
    from ds4kit.synth import preset, write_target

    path = tmp_dir() / "synth-tiny-mixed-types.gguf"
    if not path.exists():
        cfg = dataclasses.replace(preset("tiny"), n_embd=256, expert_ff=256)
        write_target(path, cfg, seed=4, types=MIXED_TYPES, progress=False)
    return path


def _logits(path: Path, level: str, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DS4KIT_CPU_FEATURES"}
    env["PYTHONPATH"] = str(REPO)
    if level != "default":
        env["DS4KIT_CPU_FEATURES"] = level
    r = subprocess.run([sys.executable, str(HERE / "dispatch_bits_engine_worker.py"), str(path), str(out), "2",
                        str(N_TOKENS)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module", params=["tiny", "mixed_types"])
def level_logits(request, tmp_path_factory):
    path = synth_tiny_path() if request.param == "tiny" else _mixed_types_path()
    d = tmp_path_factory.mktemp(f"dispatch_bits_{request.param}")
    return {level: _logits(path, level, d / f"{level}.npz") for level in LEVELS}


def test_levels_ran_where_asked(level_logits):
    assert str(level_logits["scalar"]["backend"]) == "cpu(scalar)"
    if str(level_logits["default"]["backend"]) == "cpu(scalar)":
        pytest.skip("this CPU has no AVX2/FMA/F16C: every level is the portable one")
    assert str(level_logits["avx2"]["backend"]) == "cpu(avx2)"


@pytest.mark.parametrize("level", ["scalar", "avx2"])
def test_logits_bitwise_equal_to_default_level(level_logits, level):
    want = level_logits["default"]
    got = level_logits[level]
    for phase in ("prefill_batched", "verify", "decode", "prefill_exact"):
        a, b = got[phase], want[phase]
        assert a.shape == b.shape and np.all(np.isfinite(b)), phase
        if a.tobytes() != b.tobytes():
            rows = np.flatnonzero(np.any(a.reshape(-1, a.shape[-1]).view(np.uint32)
                                         != b.reshape(-1, b.shape[-1]).view(np.uint32), axis=1))
            pytest.fail(f"{phase} logits at {level} differ from the default level in rows {rows[:10].tolist()} "
                        f"(max |diff| {float(np.max(np.abs(a - b))):.3g})")
