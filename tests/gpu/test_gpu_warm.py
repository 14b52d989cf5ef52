"""The L2 warmer (gpu_warm.h, Backend::prefetch): the block runner names the matrices each stage
reads after its chain of small kernels, and the CUDA backend asks its L2 for them on a stream of
its own. A prefetch reads only weights and writes nothing, so decode and verify must give the
bits they give with the warmer off, with graphs recorded and replayed (the warm kernels and their
fork/join edges inside the recordings). The backend's counter must show that warm kernels were
enqueued, so the comparison is not between two runs that both left it off. Without a GPU the
tests skip loudly (the `gpu` fixture); on HIP the warmer is always off (no L2 prefetch
instruction on gfx1151), which the counter shows and the comparison test skips with that reason.
"""
from __future__ import annotations

import numpy as np
import pytest

from test_gpu_forward import _path
from test_gpu_seam import gpu  # noqa: F401  (gpu is a fixture)

from ds4kit import _engine

NAME = "small-q2k"


def _model(gpu_kind: str, monkeypatch, **env: str) -> _engine.Model:
    for k in ("DS4KIT_GPU_WARM", "DS4KIT_GPU_WARM_MB", "DS4KIT_GPU_WARM_BLOCKS"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return _engine.Model(str(_path(NAME)), threads=0, backend=gpu_kind)


@pytest.mark.parametrize("mode", ["l2", "last"])
def test_warming_changes_no_bit(gpu, monkeypatch, mode):
    toks = [int(t) for t in np.random.default_rng(5).integers(0, 1024, 80)]
    off = _model(gpu, monkeypatch, DS4KIT_GPU_WARM="off")
    assert off.backend_counters()["l2_warm_launches"] == -1
    s = off.session(100)
    want = np.stack([s.decode(t) for t in toks])

    # 1 MB a hint and 3 blocks: a hint's last matrix is cut short, and the grid strides.
    on = _model(gpu, monkeypatch, DS4KIT_GPU_WARM=mode, DS4KIT_GPU_WARM_MB="1", DS4KIT_GPU_WARM_BLOCKS="3")
    if on.backend_counters()["l2_warm_launches"] == -1:
        pytest.skip(f"the L2 warmer is off on {on.backend} (CUDA sm_80+ only)")
    s = on.session(100)
    got = np.stack([s.decode(t) for t in toks])
    bad = np.flatnonzero(np.any(got != want, axis=1))
    assert bad.size == 0, f"decode with DS4KIT_GPU_WARM={mode} differs at positions {bad[:10].tolist()}"
    s = on.session(100)
    rows = np.concatenate([s.verify(toks[i:i + 5]) for i in range(0, len(toks), 5)])
    bad = np.flatnonzero(np.any(rows != want, axis=1))
    assert bad.size == 0, f"verify width 5 with DS4KIT_GPU_WARM={mode}: rows {bad[:10].tolist()} differ from decode"
    c = on.backend_counters()
    assert c["l2_warm_launches"] > 0 and c["steps_replayed"] > 0, c


@pytest.mark.parametrize("var,value", [("DS4KIT_GPU_WARM", "sometimes"), ("DS4KIT_GPU_WARM_MB", "0"),
                                       ("DS4KIT_GPU_WARM_BLOCKS", "many")])
def test_a_bad_setting_is_named(gpu, monkeypatch, var, value):
    with pytest.raises(Exception, match=var):
        _model(gpu, monkeypatch, **{var: value})
