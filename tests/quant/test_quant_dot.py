"""Dot kernels at every dispatch level, each in its own process (the level is
fixed per process by DS4KIT_CPU_FEATURES): accuracy against a float64 numpy dot
of the gguf-py / spec-reference dequantised row, bitwise column invariance of
dot_row_cols for ncols 1..8, determinism, and matvec == dot_row per row.

Tolerance, relative to sum_i |w_i x_i| (so cancellation cannot hide errors), the same
at every level since every level reduces in the one canonical order (quant_dot.h):
  1e-5  (float32 FMA into 16 lanes: each lane sums <= n/16 + 1 terms, so the
        worst-case bound is about (n/16 + 5) * 2^-24 = 8.1e-6 for n = 2085)
test_quant_dispatch_bits.py checks that the levels agree bit for bit.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ds4kit import _engine

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
KERNEL_IDS = sorted(t["id"] for t in _engine.qtypes() if t["kernels"])
TOLERANCE = {"scalar": 1e-5, "avx2": 1e-5}


def _host_has_avx2() -> bool:
    env = {k: v for k, v in os.environ.items() if k != "DS4KIT_CPU_FEATURES"}
    out = subprocess.run([sys.executable, "-c", "from ds4kit import _engine; print(_engine.cpu_features())"],
                         env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, check=True)
    feats = out.stdout.strip().split(",")
    return all(f in feats for f in ("avx2", "fma", "f16c"))


HOST_AVX2 = _host_has_avx2()
# Level requested -> the implementation the engine must report using.
EXPECTED_DISPATCH = {"scalar": "scalar", "avx2": "avx2" if HOST_AVX2 else "scalar",
                     "default": "avx2" if HOST_AVX2 else "scalar"}


@pytest.fixture(scope="module", params=["scalar", "avx2", "default"])
def level_run(request):
    env = {k: v for k, v in os.environ.items() if k != "DS4KIT_CPU_FEATURES"}
    env["PYTHONPATH"] = str(REPO)
    if request.param != "default":
        env["DS4KIT_CPU_FEATURES"] = request.param
    out = subprocess.run([sys.executable, str(HERE / "quant_dot_worker.py")], env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-4000:]
    return request.param, json.loads(out.stdout)


def test_dispatch_level_is_what_was_asked(level_run):
    level, run = level_run
    assert run["dispatch"] == EXPECTED_DISPATCH[level]
    if level == "scalar":
        assert run["cpu"] == "scalar"


@pytest.mark.parametrize("type_id", KERNEL_IDS)
def test_dot_accuracy_vs_float64(level_run, type_id):
    _, run = level_run
    r = run["results"][str(type_id)]
    tol = TOLERANCE[run["dispatch"]]
    assert r["worst_rel_err"] <= tol, f"type {type_id}: {r['worst_rel_err']:.3g} > {tol:g} at {run['dispatch']}"


@pytest.mark.parametrize("type_id", KERNEL_IDS)
def test_dot_cols_bitwise_invariant_and_deterministic(level_run, type_id):
    _, run = level_run
    r = run["results"][str(type_id)]
    assert r["cols_invariant"], f"type {type_id}: dot_row_cols differs from dot_row"
    assert r["deterministic"], f"type {type_id}: repeated dot_row differs"
    assert r["matvec_equal"], f"type {type_id}: matvec differs from dot_row"


@pytest.mark.parametrize("type_id", KERNEL_IDS)
def test_matmul_kernel_equals_dot_row_bitwise(level_run, type_id):
    _, run = level_run
    assert run["results"][str(type_id)]["matmul_equal"], f"type {type_id}: matmul_rows differs from dot_row"


def test_rocmfp_scale_bytes_exact_through_dot(level_run):
    _, run = level_run
    assert run["rocmfp_scales_exact"], "a ROCmFP scale byte decodes differently in the dot path"
