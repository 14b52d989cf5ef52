"""Same bits at every CPU dispatch level: the portable (scalar) kernels reduce in the
canonical order of quant_dot.h / attn_kernels.h, so their outputs equal the AVX2 and
AVX-512 ones byte for byte, for every quant type with kernels (dot_row, dot_row_cols,
matvec, matmul_rows incl. the AVX-512 tiles and fused decoders) and for the attention
kernels. Each level runs dispatch_bits_worker.py in its own process."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _run(level: str, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DS4KIT_CPU_FEATURES"}
    env["PYTHONPATH"] = str(REPO)
    if level != "default":
        env["DS4KIT_CPU_FEATURES"] = level
    r = subprocess.run([sys.executable, str(HERE / "dispatch_bits_worker.py"), str(out)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("dispatch_bits")
    return {level: _run(level, d / f"{level}.npz") for level in ("scalar", "avx2", "default")}


def _mismatches(a: dict, b: dict) -> list[str]:
    assert a.keys() == b.keys()
    bad = []
    for k in sorted(a):
        if k.startswith("_"):
            continue
        x, y = a[k], b[k]
        assert x.dtype == y.dtype and x.shape == y.shape, k
        if x.tobytes() != y.tobytes():
            bits = x.view(np.uint32 if x.dtype == np.float32 else np.uint64)
            n_diff = int(np.count_nonzero(bits != y.view(bits.dtype)))
            bad.append(f"{k} ({n_diff}/{x.size} differ)")
    return bad


def test_inputs_are_not_trivial(runs):
    outs = [v for k, v in runs["default"].items() if not k.startswith("_")]
    assert len(outs) > 1000
    # every output holds some nonzero, finite values
    assert all(np.any(v != 0) for v in outs)
    assert all(np.all(np.isfinite(v)) for v in outs)


def test_levels_are_what_was_asked(runs):
    assert list(runs["scalar"]["_dispatch"]) == ["scalar", "scalar"]
    quant, attn = runs["default"]["_dispatch"]
    if quant == "scalar":
        pytest.skip("this CPU has no AVX2/FMA/F16C: every level is the portable one")
    assert list(runs["avx2"]["_dispatch"]) == ["avx2", "avx2"]


@pytest.mark.parametrize("level", ["scalar", "avx2"])
def test_bitwise_equal_to_default_level(runs, level):
    bad = _mismatches(runs[level], runs["default"])
    if bad:
        groups = sorted({b.split("/")[0] for b in bad})
        pytest.fail(f"{len(bad)} outputs differ at {level} vs default (in {', '.join(groups)}): " + "; ".join(bad[:30]))
