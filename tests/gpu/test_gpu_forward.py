"""The whole forward on the GPU backend against the CPU backend, and the GPU against itself.

On small synthetic models whose matrices cover every weight type the GPU decodes (the tiny
preset's Q8_0/Q4_0/F16; Q2_K experts with Q8_0 attention as the issue's benchmark file;
IQ2_XXS/Q4_K/MXFP4/BF16/F32; the ROCmFP types 100-104 and 107), for a prompt long enough to
wrap the window, cross ratio-4 and ratio-128 boundaries and make the indexer select:

- GPU vs CPU logits, one-by-one decode: per position the KL divergence KL(p_cpu || p_gpu) and
  whether the top-1 token agrees. The argmax must be equal wherever the CPU's top-2 margin
  exceeds MARGIN_TOL; mean and max KLD and the top-1 agreement have the bounds stated below.
- verify == decode bitwise on the GPU at widths 1-8, and both prefill modes.
- snapshot + restore and rewind replay bitwise on the GPU; a GPU snapshot's image has the CPU
  image's layout and values within F16/FP8 rounding of it.

These are the float kernels' checks: every test here runs with DS4KIT_GPU_INT8=never, the CPU
engine's arithmetic. The default puts the routed Q2_K experts (and with them a Q8_0 shared
expert) on int8 columns, a different arithmetic with its own oracle (test_gpu_int8.py); no
model without Q2_K experts depends on it.

The oracle for the first check is the CPU backend (itself checked against the float64 numpy
reference in tests/engine); for the others the GPU's own one-by-one decode. Without a usable GPU
every test SKIPS loudly (test_gpu_seam's `gpu` fixture). DS4KIT_GPU_REPORT_DIR: per-model,
per-position errors go to gpu-forward.json there. DS4KIT_GPU_SEAM_SMALL=1 (the HIP-CPU
emulation) shortens the prompts.
"""
from __future__ import annotations

import json
import math
import os
import zlib
from pathlib import Path

import numpy as np
import pytest

from test_gpu_seam import _small, gpu, tmp_dir  # noqa: F401  (gpu is a fixture)

from ds4kit import _engine

# GPU and CPU differ continuously (float32 matmul accumulation against double, exp/pow/cos to
# a few ulps: a logit nerr near 1e-6 on the first positions) and discretely: a stored KV or
# compressed row element that lands near an F16, FP8 or FP4 rounding boundary can round the
# other way (one element moves by an F16 ulp, or by 1/16 of itself in FP8), and a near-tie in
# expert routing or the indexer's top-k can pick another expert or row. Each flip shifts the
# logits from then on by ~1e-3 (norm-relative), and a routing flip can shift one position's
# logits by ~0.1 (a KLD of a few 1e-3): measured in the HIP-CPU emulation, which runs these
# kernels with the host's libm, and on the H200 (reports/examples/gpu-forward-h200/). So the
# checks are statistical, with bounds a wrong kernel breaks by orders of magnitude (a wrong
# element, block scale or attention row gives a mean KLD >~ 1e-2 and many argmax changes):
MEAN_KLD_TOL = 1e-3     # mean over positions of KL(p_cpu || p_gpu)
MAX_KLD_TOL = 5e-2      # any single position
MIN_TOP1 = 0.95         # top-1 agreement over positions
MARGIN_TOL = 0.5        # the argmax must agree wherever the CPU's top-2 logit margin exceeds this

VOCAB = 1024
# Model name -> (preset, type overrides, prompt tokens, tokens in the SMALL emulation run).
MODELS = {
    "tiny-default": ("tiny", None, 60, 30),
    "small-q2k": ("small", {"experts": "Q2_K", "attn": "Q8_0", "attn_out": "Q8_0", "shared": "Q8_0", "output": "Q8_0",
                            "hc": "F16", "compressor": "F16", "indexer": "F16", "router": "F16"}, 140, 72),
    "small-iq2-q4k-mxfp4-bf16": ("small", {"experts": "IQ2_XXS", "shared": "Q4_K", "attn": "MXFP4", "attn_out": "BF16",
                                           "output": "MXFP4", "embed": "BF16", "compressor": "BF16",
                                           "indexer": "F32", "router": "F32", "hc": "BF16"}, 72, 40),
    "small-rocmfp": ("small", {"experts": "Q2_0_ROCMFP2", "shared": "Q4_0_ROCMFP4", "attn": "Q6_0_ROCMFPX",
                               "attn_out": "Q8_0_ROCMFPX", "output": "Q3_0_ROCMFPX",
                               "indexer": "Q4_0_ROCMFP4_FAST"}, 72, 40),
}

_REPORT: dict = {}


@pytest.fixture(autouse=True)
def _float_columns(monkeypatch):
    monkeypatch.setenv("DS4KIT_GPU_INT8", "never")  # the float kernels: see the module's docstring


def _write_report():
    out = os.environ.get("DS4KIT_GPU_REPORT_DIR")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        payload = {"tolerances": {"mean_kld": MEAN_KLD_TOL, "max_kld": MAX_KLD_TOL, "min_top1": MIN_TOP1,
                                  "margin": MARGIN_TOL}, "models": _REPORT}
        (Path(out) / "gpu-forward.json").write_text(json.dumps(payload, indent=1))


def _path(name: str) -> Path:
    preset_name, types, _, _ = MODELS[name]
    return _synth_preset(name, preset_name, types)


def _synth_preset(name: str, preset_name: str, types: dict | None) -> Path:
    from ds4kit.synth import preset, write_target

    folder = Path(os.environ.get("DS4KIT_GPU_SEAM_MODEL_DIR") or tmp_dir())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"fwd-{name}-v{VOCAB}.gguf"
    if not path.exists():
        write_target(path, preset(preset_name).replace(vocab_size=VOCAB), seed=9, types=types, progress=False)
    return path


def _tokens(name: str) -> list[int]:
    n = MODELS[name][3] if _small() else MODELS[name][2]
    return [int(t) for t in np.random.default_rng(zlib.crc32(name.encode())).integers(0, VOCAB, n)]


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


_CACHE: dict = {}


def _runs(name: str, gpu_kind: str):
    """(tokens, cpu decode logits, gpu model, gpu decode logits), computed once per model."""
    if name not in _CACHE:
        path = _path(name)
        toks = _tokens(name)
        cpu = _engine.Model(str(path), threads=0, backend="cpu")
        s = cpu.session(len(toks) + 8)
        want = np.stack([s.decode(t) for t in toks])
        g = _engine.Model(str(path), threads=0, backend=gpu_kind)
        s = g.session(len(toks) + 8)
        got = np.stack([s.decode(t) for t in toks])
        _CACHE[name] = (toks, want, g, got, cpu)
    return _CACHE[name]


@pytest.mark.parametrize("name", list(MODELS))
def test_gpu_logits_match_cpu(gpu, name):
    toks, want, _, got, _ = _runs(name, gpu)
    assert np.all(np.isfinite(got)), "GPU logits hold NaN/inf"
    lp, lq = _log_softmax(want), _log_softmax(got)
    kld = (np.exp(lp) * (lp - lq)).sum(axis=-1)
    top_cpu, top_gpu = want.argmax(-1), got.argmax(-1)
    srt = np.sort(want, axis=-1)
    margin = srt[:, -1] - srt[:, -2]
    agree = top_cpu == top_gpu
    nerr = np.linalg.norm(got - want, axis=-1) / np.linalg.norm(want, axis=-1)
    _REPORT[name] = {
        "types": MODELS[name][1] or "preset defaults", "preset": MODELS[name][0], "tokens": len(toks),
        "max_kld": float(kld.max()), "mean_kld": float(kld.mean()), "top1_agreement": float(agree.mean()),
        "max_logit_nerr": float(nerr.max()), "max_logit_absdiff": float(np.abs(got - want).max()),
        "per_position": [{"pos": i, "kld": float(kld[i]), "top1_agree": bool(agree[i]), "cpu_margin": float(margin[i]),
                          "logit_nerr": float(nerr[i])} for i in range(len(toks))],
    }
    _write_report()
    flips = [i for i in range(len(toks)) if not agree[i] and margin[i] > MARGIN_TOL]
    assert not flips, f"{name}: argmax differs at positions {flips} whose CPU margin exceeds {MARGIN_TOL}"
    worst = int(kld.argmax())
    assert kld.mean() <= MEAN_KLD_TOL, f"{name}: mean KLD {kld.mean():.3g} (tolerance {MEAN_KLD_TOL})"
    assert kld.max() <= MAX_KLD_TOL, f"{name}: KLD {kld.max():.3g} at position {worst} (tolerance {MAX_KLD_TOL})"
    assert agree.mean() >= MIN_TOP1, f"{name}: top-1 agreement {agree.mean():.3f} (at least {MIN_TOP1})"


def assert_verify_and_prefill_equal_decode(g, toks: list[int], want: np.ndarray, name: str):
    """Verify of widths 1-8 and both prefill modes on model g give `want`, its one-by-one
    decode logits of toks, bit for bit (and decode after a prefill continues them)."""
    n = len(toks)
    for width in range(1, 9):
        s = g.session(n + 8)
        got = np.concatenate([s.verify(toks[i:i + width]) for i in range(0, n, width)])
        diff = np.flatnonzero(np.any(got != want, axis=1))
        assert diff.size == 0, f"{name}: verify width {width}: rows {diff[:10].tolist()} differ from GPU decode"
    for mode in ("exact", "batched"):
        s = g.session(n + 8)
        s.decode(toks[0])  # start unaligned, so blocks cross ratio-4 boundaries
        last = s.prefill(toks[1:n - 1], mode)
        assert np.array_equal(last, want[n - 2]), f"{name}: prefill {mode} last logits differ from GPU decode"
        assert np.array_equal(s.decode(toks[n - 1]), want[n - 1]), f"{name}: decode after prefill {mode}"


@pytest.mark.parametrize("name", list(MODELS))
def test_gpu_verify_and_prefill_equal_gpu_decode(gpu, name):
    toks, _, g, want, _ = _runs(name, gpu)
    assert_verify_and_prefill_equal_decode(g, toks, want, name)
    _REPORT.setdefault(name, {})["verify_widths_1_8_bitwise"] = True
    _REPORT[name]["prefill_modes_bitwise"] = True
    _write_report()


def decode_verify_prefill(path: Path, gpu_kind: str, toks: list[int], widths=(5,)) -> dict:
    """A fresh model's one-by-one decode of toks, its verify of each width in steps, and its
    batched prefill of toks[1:] after decoding toks[0]: the logits of each, by name."""
    g = _engine.Model(str(path), threads=0, backend=gpu_kind)
    n = len(toks)
    s = g.session(n + 8)
    out = {"decode": np.stack([s.decode(t) for t in toks])}
    for width in widths:
        s = g.session(n + 8)
        out[f"verify width {width}"] = np.concatenate([s.verify(toks[i:i + width]) for i in range(0, n, width)])
    s = g.session(n + 8)
    s.decode(toks[0])
    out["batched prefill"] = s.prefill(toks[1:], "batched")
    return out


def assert_same_bits(a: dict, b: dict, what_varies: str, name: str):
    for what, want in a.items():
        assert np.array_equal(b[what], want), f"{name}: {what} logits depend on {what_varies}"


def assert_row_groups_change_no_bit(path: Path, gpu_kind: str, toks: list[int], name: str, monkeypatch):
    """decode_verify_prefill with DS4KIT_GPU_ROW_GROUPS=never and =always, bit for bit."""
    out = {}
    for mode in ("never", "always"):
        monkeypatch.setenv("DS4KIT_GPU_ROW_GROUPS", mode)
        out[mode] = decode_verify_prefill(path, gpu_kind, toks)
    assert_same_bits(out["never"], out["always"], "the row groups", name)


@pytest.mark.parametrize("name", ["small-q2k", "small-iq2-q4k-mxfp4-bf16"])
def test_gpu_row_groups_change_no_bit(gpu, name, monkeypatch):
    """The matrix kernels' groups of R rows (gpu_dot.h) change no bit. The automatic rule gives
    them only to matrices of 8192+ rows (the head and experts of the real widths, none of these
    models'), so DS4KIT_GPU_ROW_GROUPS=always puts every matmul and expert through them: decode,
    verify of width 5 and a batched prefill must equal =never's bit for bit. A bad value is an
    error that names the variable (so the launchers do read it)."""
    toks = _runs(name, gpu)[0]
    n = len(toks)
    assert_row_groups_change_no_bit(_path(name), gpu, toks, name, monkeypatch)
    monkeypatch.setenv("DS4KIT_GPU_ROW_GROUPS", "sometimes")
    g = _engine.Model(str(_path(name)), threads=0, backend=gpu)
    with pytest.raises(Exception, match="DS4KIT_GPU_ROW_GROUPS is 'sometimes'"):
        g.session(n + 8).decode(toks[0])


# Launch-saving choices that must change no bit: (variable, a launch per piece, the fused form).
FUSION_CHOICES = [
    # The attention input's projections (q_a, kv, the compressors' matrices) in one launch per
    # weight type (Backend::matmul_shared_x, gpu_matmul.cu's set kernel) or a launch each.
    ("DS4KIT_GPU_MATMUL_SETS", "never", "auto"),
    # Each sublayer's HC collapse and norm: two kernels (the default) or one (gpu_hc.cu).
    ("DS4KIT_GPU_HC_NORM", "split", "fused"),
    # The query heads' and KV row's norms, RoPE, FP8 and the KV store: six launches or one
    # (Backend::attention_inputs, gpu_attention_inputs.cu).
    ("DS4KIT_GPU_ATTN_INPUTS", "split", "fused"),
]


@pytest.mark.parametrize("var, apart, fused", FUSION_CHOICES)
@pytest.mark.parametrize("name", ["small-q2k", "small-iq2-q4k-mxfp4-bf16"])
def test_gpu_fusions_change_no_bit(gpu, name, var, apart, fused, monkeypatch):
    """Decode, verify of widths 3 and 8 (the set kernel's column batches) and a batched prefill
    give the same bits with the pieces launched apart and fused; a bad value is an error that
    names the variable (so the launchers do read it)."""
    toks = _runs(name, gpu)[0]
    n = len(toks)
    out = {}
    for mode in (apart, fused):
        monkeypatch.setenv(var, mode)
        out[mode] = decode_verify_prefill(_path(name), gpu, toks, widths=(3, 8))
    assert_same_bits(out[apart], out[fused], var, name)
    monkeypatch.setenv(var, "sometimes")
    g = _engine.Model(str(_path(name)), threads=0, backend=gpu)
    with pytest.raises(Exception, match=f"{var} is 'sometimes'"):
        g.session(n + 8).decode(toks[0])


@pytest.mark.parametrize("name", ["small-q2k", "small-iq2-q4k-mxfp4-bf16"])
def test_gpu_matmul_grid_changes_no_bit(gpu, name, monkeypatch):
    """One-column matmuls run a strided grid (gpu_matmul_kernels.h strided_grid: a block walks row
    blocks b, b + grid, ...; at most one wave). On these models one wave holds every row block, so
    DS4KIT_GPU_MATMUL_GRID=few (two blocks a launch) makes every block walk many: decode, verify of
    widths 3 and 8 and a batched prefill must equal a block per row block (=full) bit for bit. A
    bad value is an error that names the variable."""
    toks = _runs(name, gpu)[0]
    n = len(toks)
    out = {}
    for mode in ("full", "few"):
        monkeypatch.setenv("DS4KIT_GPU_MATMUL_GRID", mode)
        out[mode] = decode_verify_prefill(_path(name), gpu, toks, widths=(3, 8))
    assert_same_bits(out["full"], out["few"], "the matmul grid", name)
    monkeypatch.setenv("DS4KIT_GPU_MATMUL_GRID", "sometimes")
    g = _engine.Model(str(_path(name)), threads=0, backend=gpu)
    with pytest.raises(Exception, match="DS4KIT_GPU_MATMUL_GRID is 'sometimes'"):
        g.session(n + 8).decode(toks[0])


# The kernel choices calls of several tokens make from the call, each with the variable that
# forces it: (variable, the choice before 2026-12-02, the prefill blocks' choice, a bad value).
WIDE_CALL_CHOICES = [
    ("DS4KIT_GPU_WIDE_ROWS", "never", "always", "sometimes"),  # matmuls of > 8 columns, shared expert
    ("DS4KIT_GPU_MOE_COLUMNS", "4", "1", "3"),                 # routed experts: columns per pass
    ("DS4KIT_GPU_ATTN_HEADS", "1", "64", "none"),              # attention: heads a block (as many as divide)
    ("DS4KIT_GPU_ATTN_TOKENS", "1", "auto", "0"),              # attention: tokens a launch
]


@pytest.mark.parametrize("name", ["small-q2k", "small-iq2-q4k-mxfp4-bf16"])
def test_gpu_wide_calls_change_no_bit(gpu, name, monkeypatch):
    """Calls of several tokens pick their kernels from the call: matmuls of more than 8 columns
    (prefill blocks) and the shared expert's run groups of 4 columns by 4 rows (gpu_matmul.cu
    wide_rows_for), the routed experts of several tokens a column per pass (gpu_moe.cu
    routed_one_column), and attention's heads a block and tokens a launch (gpu_attention.cu
    head_group, tokens_per_launch). None may change a bit: with every choice forced the new
    way (whatever the model's size) a batched prefill and a verify of width 5 must equal those
    with every choice forced the old way, and the prefill must equal one-by-one decode. Bad
    values are errors that name the variable."""
    toks, _, _, decoded, _ = _runs(name, gpu)
    n = len(toks)
    out = {}
    for which in (1, 2):
        for choice in WIDE_CALL_CHOICES:
            monkeypatch.setenv(choice[0], choice[which])
        g = _engine.Model(str(_path(name)), threads=0, backend=gpu)
        s = g.session(n + 8)
        ver = np.concatenate([s.verify(toks[i:i + 5]) for i in range(0, n, 5)])
        s = g.session(n + 8)
        s.decode(toks[0])
        pre = s.prefill(toks[1:], "batched")
        out[which] = {"verify width 5": ver, "batched prefill": pre}
    for what, want in out[1].items():
        assert np.array_equal(out[2][what], want), f"{name}: {what} logits depend on the wide-call kernels"
    assert np.array_equal(out[2]["batched prefill"], decoded[n - 1]), f"{name}: prefill differs from decode"
    for var, _, _, bad in WIDE_CALL_CHOICES:
        for other, *_ in WIDE_CALL_CHOICES:
            monkeypatch.setenv(other, "auto")
        monkeypatch.setenv(var, bad)
        g = _engine.Model(str(_path(name)), threads=0, backend=gpu)
        with pytest.raises(Exception, match=f"{var} is '{bad}'"):
            g.session(n + 8).prefill(toks[:20], "batched")


def _kld_checks(name: str, want: np.ndarray, got: np.ndarray) -> dict:
    """The bounds of test_gpu_logits_match_cpu on rows of CPU (want) and GPU (got) logits."""
    lp, lq = _log_softmax(want), _log_softmax(got)
    kld = (np.exp(lp) * (lp - lq)).sum(axis=-1)
    srt = np.sort(want, axis=-1)
    margin = srt[:, -1] - srt[:, -2]
    agree = want.argmax(-1) == got.argmax(-1)
    flips = [i for i in range(len(want)) if not agree[i] and margin[i] > MARGIN_TOL]
    assert not flips, f"{name}: argmax differs at rows {flips} whose CPU margin exceeds {MARGIN_TOL}"
    assert kld.mean() <= MEAN_KLD_TOL, f"{name}: mean KLD {kld.mean():.3g} (tolerance {MEAN_KLD_TOL})"
    assert kld.max() <= MAX_KLD_TOL, f"{name}: max KLD {kld.max():.3g} (tolerance {MAX_KLD_TOL})"
    return {"mean_kld": float(kld.mean()), "max_kld": float(kld.max()), "top1_agreement": float(agree.mean())}


def test_gpu_long_context_matches_cpu(gpu):
    """Past 1024 positions a ratio-4 layer's indexer rows outnumber the selection block's threads
    (gpu_indexer.cu then gives each thread a run of rows and places them by block scans): at 1600
    tokens the small model's ratio-4 layers pick 16 of up to 400 rows, the ratio-128 layers see
    12 compressed rows and the window has wrapped many times. After a batched prefill, the next
    8 tokens decoded on the GPU against the CPU (the bounds above), and the GPU's verify of them
    equal to its decode bit for bit."""
    name = "small-q2k"
    n = 400 if _small() else 1600
    toks = [int(t) for t in np.random.default_rng(77).integers(0, VOCAB, n)]
    rows = {}
    for kind in ("cpu", gpu):
        s = _engine.Model(str(_path(name)), threads=0, backend=kind).session(n + 8)
        s.prefill(toks[:n - 8], "batched")
        rows[kind] = np.stack([s.decode(t) for t in toks[n - 8:]])
    g = _engine.Model(str(_path(name)), threads=0, backend=gpu)
    s = g.session(n + 8)
    s.prefill(toks[:n - 8], "batched")
    assert np.array_equal(s.verify(toks[n - 8:]), rows[gpu]), f"{name}: verify at {n} tokens differs from decode"
    _REPORT[f"{name}-long-{n}"] = _kld_checks(f"{name} at {n} tokens", rows["cpu"], rows[gpu])
    _write_report()


@pytest.mark.parametrize("name", ["tiny-default", "small-q2k"])
def test_gpu_snapshot_restore_and_rewind_replay_bitwise(gpu, name):
    toks, _, g, decoded, cpu = _runs(name, gpu)
    n = len(toks)
    cut = n // 2
    s = g.session(n + 40)
    s.prefill(toks[:cut], "batched")
    snap = s.snapshot()
    want = np.stack([s.decode(t) for t in toks[cut:]])
    assert np.array_equal(want, decoded[cut:]), f"{name}: decode after a batched prefill differs"
    other = [int(t) for t in np.random.default_rng(5).integers(0, VOCAB, 37)]
    for detour in (other, other[:5], []):
        s.restore(snap)
        if detour:
            s.verify(detour)
        s.restore(snap)
        got = np.stack([s.decode(t) for t in toks[cut:]])
        assert np.array_equal(got, want), f"{name}: replay after a restore (detour of {len(detour)}) differs"
    # Rewind: take back k positions and feed the same tokens again.
    for k in (1, 7, min(32, n - cut)):
        s.rewind(k)
        got = s.verify(toks[n - k:])
        assert np.array_equal(got, want[len(want) - k:]), f"{name}: replay after rewind({k}) differs"
    # The image: the CPU's layout, values within rounding of the CPU's own state.
    sc = cpu.session(n + 40)
    sc.prefill(toks[:cut], "batched")
    gi, ci = snap.image(), sc.snapshot().image()
    assert (gi["pos"], gi["hwm"]) == (ci["pos"], ci["hwm"])
    assert [a.shape for a in gi["arrays"]] == [a.shape for a in ci["arrays"]]
    worst = 0.0
    for a, b in zip(gi["arrays"], ci["arrays"]):
        fin = np.isfinite(b) & (np.abs(b) < 1e29)  # score rings start at -1e30
        assert np.array_equal(a[~fin], b[~fin])
        if fin.any():
            worst = max(worst, float(np.linalg.norm(a[fin] - b[fin]) / max(np.linalg.norm(b[fin]), 1e-30)))
    _REPORT.setdefault(name, {})["snapshot_rewind_bitwise"] = True
    _REPORT[name]["image_vs_cpu_worst_nerr"] = worst
    _write_report()
    assert worst < 5e-2, f"{name}: GPU state image differs from the CPU's by {worst:.3g} (norm-relative)"
    # A GPU image loads back into the GPU and continues bitwise.
    s2 = g.session(n + 40)
    s2.restore(g.snapshot_from_image(n + 40, True, True, gi["pos"], gi["hwm"], toks[:cut], gi["arrays"]))
    got = np.stack([s2.decode(t) for t in toks[cut:]])
    assert np.array_equal(got, want), f"{name}: a session restored from the GPU image differs"


def test_gpu_reports_bad_token_ids(gpu):
    """A token id outside the vocabulary is refused with an error, not read out of bounds."""
    _, _, g, _, _ = _runs("tiny-default", gpu)
    s = g.session(16)
    with pytest.raises((_engine.ArgumentError, ValueError)):
        s.decode(VOCAB + 5)
    assert math.isfinite(float(s.decode(3).max()))
