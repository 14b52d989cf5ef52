"""The limits `bench engine`'s fractions divide by on a GPU backend: the device's measured
bandwidth and its stated bf16 peak (ds4kit.bench.hw_limits --device, gpu_peaks), never the
host's. On a machine without a GPU the probe must say why it measured nothing; the GPU's own
measurement runs in tests/gpu/test_gpu_device_limits.py."""
from __future__ import annotations

import pytest

from ds4kit import _engine
from ds4kit.bench.engine_bench import best_probe, fraction_limits, fractions, run_hw_probe
from ds4kit.bench.gpu_peaks import bf16_peak
from ds4kit.bench.hw_limits import device_probe

GPU_BUILT = any(name in ("cuda", "hip") and status == "ok" for name, status in _engine.available_backends())


def _host() -> dict:
    return {"llc_bytes": 1, "bandwidth": {"bytes_per_s": 50e9}, "matmul": {"flop_per_s": 1e12}}


def _device(bw: float, peak: float | None) -> dict:
    return {"kind": "cuda", "device": "NVIDIA H200", "arch": "sm_90", "multiprocessors": 132, "array_bytes": 2**30,
            "read_bytes_per_s": bw, "copy_bytes_per_s": bw * 0.9, "bytes_per_s": bw,
            "matrix_flop_per_s": peak, "matrix_peak_source": "test"}


WORK = {"decode_bytes_per_token": {"total": 2e9}, "prefill_params": {"per_token": 1e9, "output_head": 5e8}}
TESTS = {"tg64": {"tok_s": 400.0, "n_tokens": 64}, "pp512": {"tok_s": 1000.0, "n_tokens": 512}}
KINDS = {"tg64": "tg", "pp512": "pp"}


def test_gpu_backend_fractions_divide_by_the_device():
    hw = best_probe([dict(_host(), device=_device(4.0e12, 989.4e12)), dict(_host(), device=_device(4.1e12, 989.4e12))])
    assert hw["device"]["bytes_per_s"] == 4.1e12  # the better of the two probes
    hw["limits"] = fraction_limits(hw, on_device=True)
    f = fractions(TESTS, KINDS, WORK, hw)
    assert f["tg64"] == pytest.approx(400.0 * 2e9 / 4.1e12)
    assert f["pp512"] == pytest.approx(1000.0 * 2 * (1e9 + 5e8 / 512) / 989.4e12)
    hw["limits"] = fraction_limits(hw, on_device=False)  # a CPU run: the host's limits
    assert fractions(TESTS, KINDS, WORK, hw)["tg64"] == pytest.approx(400.0 * 2e9 / 50e9)


def test_no_fraction_without_the_devices_figure():
    hw = best_probe([dict(_host(), device=_device(4.1e12, None))])
    hw["limits"] = fraction_limits(hw, on_device=True)
    assert set(fractions(TESTS, KINDS, WORK, hw)) == {"tg64"}  # no peak listed: no prefill fraction
    hw = best_probe([dict(_host(), device={"kind": "cuda", "error": "UnsupportedError: no CUDA device"})])
    assert hw["device"]["error"].startswith("UnsupportedError")
    hw["limits"] = fraction_limits(hw, on_device=True)
    assert fractions(TESTS, KINDS, WORK, hw) == {}  # never the host's limits for a GPU run


def test_stated_peaks():
    assert bf16_peak("NVIDIA H200", "sm_90")["flop_per_s"] == 989.4e12
    assert bf16_peak("AMD Radeon 8060S", "gfx1151")["flop_per_s"] == pytest.approx(59.392e12)
    unknown = bf16_peak("NVIDIA H200 NVL", "sm_90")  # another part: not the SXM figure
    assert unknown["flop_per_s"] is None and "NVIDIA H200 NVL" in unknown["source"]


@pytest.mark.skipif(GPU_BUILT, reason="this build has a usable GPU: tests/gpu measures it")
def test_device_probe_without_a_gpu_says_why():
    assert device_probe("auto") is None  # auto: nothing to measure, no error
    for kind in ("cuda", "hip"):
        d = device_probe(kind)
        assert d["kind"] == kind and "bytes_per_s" not in d
        assert kind in d["error"], d
    p = run_hw_probe(1, 8, "cuda")  # through the child process bench engine runs
    assert "error" in p["device"] and p["bandwidth"]["bytes_per_s"] > 0
    with pytest.raises(Exception, match="'metal' is not cuda or hip"):
        _engine.device_limits("metal")
