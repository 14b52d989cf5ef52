"""The routed Q2_K experts and the Q8_0 shared expert on int8 columns (gpu_moe_int8.cu), the
GPU's default, and every Q8_0 matmul with them (gpu_matmul_int8.cu, DS4KIT_GPU_INT8=all), on
the GPU.

By default (DS4KIT_GPU_INT8 unset, auto or shared; experts: the routed experts only; all: those
and every Q8_0 matmul, the attention's projections and the head; never: the float columns that
test_gpu_forward.py holds to the CPU engine), each such matrix's input column (for the experts
the token's normalised h for gate and up, the SwiGLU output for down) is rounded to int8 per
32 values before the product (a grouped projection's groups each on their own), so the GPU
no longer computes what the CPU engine computes (float columns). The oracle is the numpy
float64 reference with those columns rounded the same way (tests/reference/ds4_ref_int8.py
Int8Columns, which shares no code with the kernels). Measured on the H200 (run 20): the GPU
matches it to a KLD of 1e-13 per position until the first column value that lies within float
rounding of an int8 rounding boundary rounds the other way (position 13 of 140); each such flip
moves the expert's input by half a step (amax / 254), 100 times float noise, and later routing
near-ties turn that into KLD spikes of 1e-2 to 5e-2 (mean 1.6e-3 over 140 positions, median
6e-5). So the bounds here are test_gpu_forward's for the argmax, looser for the mean and max
(a wrong scale or code is off by orders of magnitude: the host simulation holds the kernels to
2e-6), and the median must sit well below the median against the CPU engine (2e-4): the oracle
tells the two arithmetics apart. With `all` every position carries about one such flip (some
14K rounded values a token), so the median bound is the larger of 2e-4 and twice the oracle's
own noise floor, measured here: the median KLD between the reference and itself with float32-
sized noise before each rounding (HIP-CPU, 2026-12-05: 1e-5 to 4e-5 for `experts`, 1.3e-4 for
the default, 4e-4 for `all`, whose GPU run gave 2.3e-4 against 7.3e-4 from the CPU engine).
Top-1 agreement is 0.9 or better, or, where the oracle disagrees with itself under that noise on
more than 5% of the positions, at most twice its disagreements (`all` on this model, step 32: the
noisy references agree with the reference on 0.914-0.936 of 140 positions with noise seeds 1-3,
the chain-order GPU on 0.893, every disagreement below MARGIN_TOL). On the GPU itself, by default and with `all`:
verify of widths 1-8 and both prefill modes equal decode bit for bit (test_gpu_forward's check); the switch changes no
bit where the experts are not Q2_K, and each of its values changes the Q2_K model's; the row groups change no
bit with int8 columns either; a bad value is an error naming the variable.
Without a usable GPU every test SKIPS loudly (test_gpu_seam's `gpu` fixture).
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from test_gpu_forward import (MARGIN_TOL, _log_softmax, _path, _tokens, assert_row_groups_change_no_bit,
                              assert_same_bits, assert_verify_and_prefill_equal_decode, decode_verify_prefill)
from test_gpu_seam import _small, gpu  # noqa: F401  (gpu is a fixture)

from ds4kit import _engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))

INT8_MEAN_KLD_TOL = 5e-3
INT8_MAX_KLD_TOL = 1e-1
INT8_MIN_TOP1 = 0.9
INT8_MEDIAN_KLD_TOL = 2e-4
NAME = "small-q2k"  # Q2_K experts; Q8_0 attention, shared expert and head (test_gpu_forward's 140 tokens)
# The switch's values with int8 columns, and the matrices each gives them (`all`: every Q8_0
# tensor of small-q2k is one of these, which _int8_reference checks).
ALL_Q8_0 = re.compile(r"ffn_(gate|up|down)_(exps|shexp)|^blk\.\d+\.attn_(q_a|q_b|kv|output_a|output_b)\.weight$"
                      r"|^output\.weight$")
MODES = {"default": (None, ALL_Q8_0),  # `all` since step 33
         "experts": ("experts", re.compile(r"ffn_(gate|up|down)_exps")),
         "shared": ("shared", re.compile(r"ffn_(gate|up|down)_(exps|shexp)")),
         "all": ("all", ALL_Q8_0)}
# The other arithmetic the bit-for-bit checks below take beside the default (`all`): the
# default of steps 21-32, float columns for every Q8_0 matmul but the shared expert.
OTHER = "shared"


def _kld(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    lp, lq = _log_softmax(want), _log_softmax(got)
    return (np.exp(lp) * (lp - lq)).sum(axis=-1)


def _decode(path: Path, backend: str, toks: list[int]) -> np.ndarray:
    s = _engine.Model(str(path), threads=0, backend=backend).session(len(toks) + 8)
    return np.stack([s.decode(t) for t in toks])


def _int8_reference(path: Path, toks: list[int], int8_matrices: re.Pattern, noise_seed: int | None = None) -> np.ndarray:
    import gguf
    from ds4_numpy_reference import ReferenceSession
    from ds4_ref_int8 import Int8Columns
    from ds4_ref_weights import Weights, load_weights

    types = {t.name: gguf.GGMLQuantizationType(int(t.tensor_type)).name for t in gguf.GGUFReader(str(path)).tensors}
    w = load_weights(path)
    chosen = [k for k in w.tensors if int8_matrices.search(k)]
    assert all(types[k] == "Q2_K" for k in chosen if "_exps" in k), "the model's routed experts are not Q2_K"
    assert all(types[k] == "Q8_0" for k in chosen if "_exps" not in k), "a chosen matrix is not Q8_0"
    assert any("_exps" in k for k in chosen)
    if int8_matrices.search("blk.0.attn_q_a.weight"):  # `all`: the GPU's rule is every Q8_0 matmul
        missed = [k for k, t in types.items() if t == "Q8_0" and k not in chosen]
        assert not missed, f"Q8_0 tensors the reference would leave on float columns: {missed}"
    counters = {k: {"products": 0} for k in chosen}
    noise = np.random.default_rng(noise_seed) if noise_seed is not None else None
    tensors = {k: Int8Columns(v, counters[k], noise) if k in chosen else v for k, v in w.tensors.items()}
    s = ReferenceSession(Weights(hp=w.hp, tensors=tensors), len(toks) + 8)
    logits = np.stack([s.step(t) for t in toks])
    unused = [k for k, c in counters.items() if c["products"] == 0]
    assert not unused, f"the reference never multiplied {unused} (its products took float columns)"
    return logits


@pytest.fixture(autouse=True)
def _default_columns(monkeypatch):
    monkeypatch.delenv("DS4KIT_GPU_INT8", raising=False)  # what a user gets


@pytest.mark.parametrize("mode", list(MODES))
def test_gpu_int8_experts_match_the_int8_reference(gpu, mode, monkeypatch):
    value, int8_matrices = MODES[mode]
    if value:
        monkeypatch.setenv("DS4KIT_GPU_INT8", value)
    path = _path(NAME)
    toks = _tokens(NAME)  # a routing flip moves one position's KLD by ~0.03: average over the whole prompt
    got = _decode(path, gpu, toks).astype(np.float64)
    want = _int8_reference(path, toks, int8_matrices)
    # The oracle's own noise floor: the same reference with float32-sized noise before each
    # rounding (ds4_ref_int8.Int8Columns); no float32 engine can be expected closer than that.
    noisy = _int8_reference(path, toks, int8_matrices, noise_seed=1)
    floor = float(np.median(_kld(want, noisy)))
    floor_top1 = float((want.argmax(-1) == noisy.argmax(-1)).mean())
    cpu = _decode(path, "cpu", toks).astype(np.float64)
    kld, kld_cpu = _kld(want, got), _kld(cpu, got)
    srt = np.sort(want, axis=-1)
    margin = srt[:, -1] - srt[:, -2]
    agree = want.argmax(-1) == got.argmax(-1)
    out = os.environ.get("DS4KIT_GPU_REPORT_DIR")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"gpu-int8-{mode}.json").write_text(json.dumps({
            "model": NAME, "tokens": len(toks), "DS4KIT_GPU_INT8": value or "(unset)",
            "int8 matrices": int8_matrices.pattern,
            "against the float64 reference with int8 expert columns": {
                "mean_kld": float(kld.mean()), "median_kld": float(np.median(kld)), "max_kld": float(kld.max()),
                "top1_agreement": float(agree.mean()),
                "first_position_above_1e-9": int(np.argmax(kld > 1e-9)) if (kld > 1e-9).any() else None,
                "noise_floor_median_kld": floor, "noise_floor_top1_agreement": floor_top1},
            "against the CPU engine (float columns)": {
                "mean_kld": float(kld_cpu.mean()), "median_kld": float(np.median(kld_cpu)), "max_kld": float(kld_cpu.max()),
                "top1_agreement": float((cpu.argmax(-1) == got.argmax(-1)).mean())},
            "per_position_kld": {"int8_reference": [float(v) for v in kld], "cpu": [float(v) for v in kld_cpu]}},
            indent=1))
    flips = [i for i in range(len(toks)) if not agree[i] and margin[i] > MARGIN_TOL]
    assert not flips, f"argmax differs from the int8 reference at positions {flips} (margin > {MARGIN_TOL})"
    assert kld.mean() <= INT8_MEAN_KLD_TOL, f"mean KLD {kld.mean():.3g} against the int8 reference"
    assert kld.max() <= INT8_MAX_KLD_TOL, f"KLD {kld.max():.3g} at position {int(kld.argmax())} against the int8 reference"
    # Low-margin disagreements at most twice the oracle's own under float32-sized noise.
    min_top1 = min(INT8_MIN_TOP1, 1.0 - 2.0 * (1.0 - floor_top1))
    assert agree.mean() >= min_top1, (
        f"top-1 agreement {agree.mean():.3f} with the int8 reference (its own under noise {floor_top1:.3f})")
    med, med_cpu = float(np.median(kld)), float(np.median(kld_cpu))
    assert med <= max(INT8_MEDIAN_KLD_TOL, 2 * floor), (
        f"median KLD {med:.3g} against the int8 reference (its noise floor {floor:.3g})")
    # Half the CPU engine's distance where the oracle's own noise lies well below it; where it
    # does not (`all`: noise 4.5e-4 against 6.1e-4 from the CPU engine), clearly closer.
    closer = 0.5 if floor <= 0.25 * med_cpu else 0.9
    assert med <= closer * med_cpu, (
        f"the int8 GPU is no closer to the int8 reference (median KLD {med:.3g}, its noise floor {floor:.3g}) than to "
        f"the float CPU engine ({med_cpu:.3g}): the oracle does not tell the arithmetics apart")


@pytest.mark.parametrize("value", [None, OTHER])
def test_gpu_int8_verify_and_prefill_equal_decode(gpu, value, monkeypatch):
    if value:
        monkeypatch.setenv("DS4KIT_GPU_INT8", value)
    path = _path(NAME)
    toks = _tokens(NAME)
    g = _engine.Model(str(path), threads=0, backend=gpu)
    s = g.session(len(toks) + 8)
    want = np.stack([s.decode(t) for t in toks])
    assert_verify_and_prefill_equal_decode(g, toks, want, f"{NAME} with DS4KIT_GPU_INT8={value or '(unset)'}")


@pytest.mark.parametrize("value", [None, OTHER])
def test_gpu_int8_long_context_bits(gpu, value, monkeypatch):
    """test_gpu_forward's long context (1600 tokens: the indexer's block scans, the window
    wrapped many times) on int8 columns: one-by-one decode of every token, a batched prefill of
    all but the last 8 then their decode, and a verify of those 8 give the same bits."""
    if value:
        monkeypatch.setenv("DS4KIT_GPU_INT8", value)
    n = 400 if _small() else 1600
    toks = [int(t) for t in np.random.default_rng(77).integers(0, 1024, n)]
    g = _engine.Model(str(_path(NAME)), threads=0, backend=gpu)
    s = g.session(n + 8)
    decoded = np.stack([s.decode(t) for t in toks])
    s = g.session(n + 8)
    last = s.prefill(toks[:n - 8], "batched")
    what = f"{NAME} at {n} tokens with DS4KIT_GPU_INT8={value or '(unset)'}"
    assert np.array_equal(last, decoded[n - 9]), f"{what}: the batched prefill differs from decode"
    snap = s.snapshot()
    assert np.array_equal(np.stack([s.decode(t) for t in toks[n - 8:]]), decoded[n - 8:]), (
        f"{what}: decode after the prefill differs from decode all the way")
    s.restore(snap)
    assert np.array_equal(s.verify(toks[n - 8:]), decoded[n - 8:]), f"{what}: verify differs from decode"


@pytest.mark.parametrize("value", [None, OTHER])
def test_gpu_int8_row_groups_change_no_bit(gpu, value, monkeypatch):
    """test_gpu_forward's row-group check with the int8 kernels (the experts' groups of 1 or 2
    rows; with `all` the Q8_0 matmuls' groups of 1, 2 or 4): decode, verify of width 5 and a
    batched prefill equal bit for bit."""
    if value:
        monkeypatch.setenv("DS4KIT_GPU_INT8", value)
    assert_row_groups_change_no_bit(_path(NAME), gpu, _tokens(NAME), f"{NAME} with DS4KIT_GPU_INT8={value or '(unset)'}",
                                    monkeypatch)


@pytest.mark.parametrize("var, one, other", [("DS4KIT_GPU_MATMUL_SETS", "never", "auto"),
                                             ("DS4KIT_GPU_WIDE_ROWS", "never", "always"),
                                             ("DS4KIT_GPU_INT8_GEMM", "never", "auto"),
                                             ("DS4KIT_GPU_NORM_INT8", "never", "auto"),
                                             ("DS4KIT_GPU_MOE_GEMM", "never", "auto"),
                                             ("DS4KIT_GPU_GEMM_PIPE", "never", "auto")])
def test_gpu_int8_all_launch_choices_change_no_bit(gpu, var, one, other, monkeypatch):
    """With every Q8_0 matmul on int8 columns, the set kernel (the attention input's q_a and kv
    in one launch, their columns quantised once), the wide calls' 4 x 4 groups, the prefill
    GEMM (tensor cores on CUDA; its two-buffer form there), the routed experts' prefill GEMMs and the norms that write the columns of the matmul they feed
    (h, q_lat, the head's input) give each row its lone GEMV launch's bits: decode, verify of
    widths 3 and 8 and a batched prefill. A bad value is an error naming the variable."""
    monkeypatch.setenv("DS4KIT_GPU_INT8", "all")
    out = {}
    for mode in (one, other):
        monkeypatch.setenv(var, mode)
        out[mode] = decode_verify_prefill(_path(NAME), gpu, _tokens(NAME), widths=(3, 8))
    assert_same_bits(out[one], out[other], var, f"{NAME} with DS4KIT_GPU_INT8=all")
    monkeypatch.setenv(var, "sometimes")
    g = _engine.Model(str(_path(NAME)), threads=0, backend=gpu)
    with pytest.raises(Exception, match=f"{var} is 'sometimes'"):
        g.session(48).prefill(_tokens(NAME)[:40], "batched")


def test_gpu_int8_moe_plan_with_h_changes_no_bit(gpu, monkeypatch):
    """With the default int8 experts, the plan and h's quantiser in one launch
    (DS4KIT_GPU_MOE_PLAN=fused, the default) give the two kernels' bits: decode, verify of widths
    3 and 8 and a batched prefill. A bad value is an error naming the variable."""
    monkeypatch.delenv("DS4KIT_GPU_INT8", raising=False)
    out = {}
    for mode in ("split", "fused"):
        monkeypatch.setenv("DS4KIT_GPU_MOE_PLAN", mode)
        out[mode] = decode_verify_prefill(_path(NAME), gpu, _tokens(NAME), widths=(3, 8))
    assert_same_bits(out["split"], out["fused"], "DS4KIT_GPU_MOE_PLAN", f"{NAME} with the default int8 experts")
    monkeypatch.setenv("DS4KIT_GPU_MOE_PLAN", "sometimes")
    g = _engine.Model(str(_path(NAME)), threads=0, backend=gpu)
    with pytest.raises(Exception, match="DS4KIT_GPU_MOE_PLAN is 'sometimes'"):
        g.session(48).prefill(_tokens(NAME)[:40], "batched")


def test_gpu_int8_switch_leaves_other_experts_alone_and_checks_its_value(gpu, monkeypatch):
    path = _path("tiny-default")  # Q4_0 experts: the experts' values do not apply
    toks = _tokens("tiny-default")[:24]
    monkeypatch.setenv("DS4KIT_GPU_INT8", "shared")
    shared = _decode(path, gpu, toks)
    monkeypatch.setenv("DS4KIT_GPU_INT8", "never")
    assert np.array_equal(_decode(path, gpu, toks), shared), (
        "DS4KIT_GPU_INT8=shared changed a model without Q2_K experts")
    q2k, q2k_toks = _path(NAME), _tokens(NAME)[:24]
    floats = _decode(q2k, gpu, q2k_toks)
    monkeypatch.setenv("DS4KIT_GPU_INT8", "experts")
    routed = _decode(q2k, gpu, q2k_toks)
    assert not np.array_equal(routed, floats), "DS4KIT_GPU_INT8=never left the Q2_K experts on int8 columns"
    monkeypatch.setenv("DS4KIT_GPU_INT8", "shared")
    both = _decode(q2k, gpu, q2k_toks)
    assert not np.array_equal(both, routed), "DS4KIT_GPU_INT8=shared left the shared expert on float columns"
    monkeypatch.setenv("DS4KIT_GPU_INT8", "all")
    every = _decode(q2k, gpu, q2k_toks)
    assert not np.array_equal(every, both), "DS4KIT_GPU_INT8=all left the Q8_0 matmuls on float columns"
    monkeypatch.delenv("DS4KIT_GPU_INT8")
    assert np.array_equal(_decode(q2k, gpu, q2k_toks), every), "the default is not DS4KIT_GPU_INT8=all"
    monkeypatch.setenv("DS4KIT_GPU_INT8", "sometimes")
    g = _engine.Model(str(_path(NAME)), threads=0, backend=gpu)
    with pytest.raises(Exception, match="DS4KIT_GPU_INT8 is 'sometimes'"):
        g.session(8).decode(toks[0])


def test_gpu_prefill_block_changes_no_bit(gpu, monkeypatch):
    """DS4KIT_PREFILL_BLOCK (the tokens a batched prefill block carries, so the columns each routed
    expert's GEMM takes a pass) changes no bit on the GPU: a prefill in blocks of 16, 64 and 256
    (the default) tokens gives the same last logits, and decode after it the same rows."""
    toks = _tokens(NAME)
    n = len(toks) - 6
    out = {}
    for block in ("16", "64", None):
        if block:
            monkeypatch.setenv("DS4KIT_PREFILL_BLOCK", block)
        else:
            monkeypatch.delenv("DS4KIT_PREFILL_BLOCK", raising=False)
        s = _engine.Model(str(_path(NAME)), threads=0, backend=gpu).session(len(toks) + 8)
        last = s.prefill(toks[:n], "batched")
        out[block] = np.vstack([last[None, :]] + [s.decode(t)[None, :] for t in toks[n:]])
    for block in ("16", "64"):
        assert np.array_equal(out[block], out[None]), f"{NAME}: DS4KIT_PREFILL_BLOCK={block} changed the logits"
