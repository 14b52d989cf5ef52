"""The GGUF writer when a tensor cannot be produced: a clear error, no partial file left behind, and
the file already at the path (if any) untouched."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from ds4kit.synth import gguf_out as G

SPECS = [G.TensorSpec(f"t{i}", (8,), 0, 32) for i in range(4)]


def _produce(spec: G.TensorSpec) -> bytes:
    if spec.name == "t2":
        os.kill(os.getpid(), signal.SIGKILL)  # what the OS's out-of-memory killer does to a worker
    return np.full(8, float(spec.name[1:]), dtype="<f4").tobytes()


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


def test_a_killed_worker_is_named_and_leaves_the_old_file(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"the earlier file")
    with pytest.raises(RuntimeError, match=r"worker process died.*rerun with fewer jobs \(-j\)"):
        G.write_gguf(path, [G.string("general.architecture", "deepseek4")], SPECS, _produce, workers=2)
    assert path.read_bytes() == b"the earlier file"
    assert _leftovers(tmp_path) == []


def test_a_failing_tensor_leaves_no_partial_file_serially(tmp_path):
    def produce(spec):
        if spec.name == "t1":
            raise ValueError("tensor t1: no values")
        return bytes(spec.nbytes)

    with pytest.raises(ValueError, match="tensor t1"):
        G.write_gguf(tmp_path / "m.gguf", [], SPECS, produce)
    assert not (tmp_path / "m.gguf").exists()
    assert _leftovers(tmp_path) == []
