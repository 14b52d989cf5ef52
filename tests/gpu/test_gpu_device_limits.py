"""The GPU's memory bandwidth as `bench engine` divides by (gpu_limits.cu through
_engine.device_limits and hw_limits --device). SKIPS loudly without a GPU."""
from __future__ import annotations

import pytest

from test_gpu_seam import gpu  # noqa: F401  (a fixture)

from ds4kit import _engine
from ds4kit.bench.hw_limits import device_probe


def test_gpu_device_limits_are_measured(gpu):
    lim = _engine.device_limits(gpu, 256 * 2**20, 3)
    assert lim["multiprocessors"] > 0 and lim["passes"] == 3
    assert lim["array_bytes"] >= max(256 * 2**20, 8 * lim["l2_bytes"])  # past the L2
    # Every GPU ds4kit targets streams between 100 GB/s (an APU) and 10 TB/s (HBM3e); a kernel
    # timed wrong (no sync, a dropped loop) lands outside by orders of magnitude.
    for key in ("read_bytes_per_s", "copy_bytes_per_s"):
        assert 1e11 < lim[key] < 1e13, (key, lim)
    with pytest.raises(Exception, match="at least one pass"):
        _engine.device_limits(gpu, 256 * 2**20, 0)
    probe = device_probe(gpu)
    assert probe["bytes_per_s"] == max(probe["read_bytes_per_s"], probe["copy_bytes_per_s"])
    assert "matrix_peak_source" in probe
