"""The GPU indexer's kernels (engine/src/backend/gpu/gpu_indexer.cu) run on the host, a block's
threads as host threads (tests/gpu_host_sim/sim_runtime.h), against plain statements of what
they compute: the scores bit for bit against the CPU backend's formula, the top-k selection
against a stable sort, on score patterns a GPU run rarely meets (ties at the cut, -0 beside +0,
all equal, 16K rows, several tokens a launch). This checks the kernels' logic on every CI run;
their speed and the device's own arithmetic are tests/gpu's (H200)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_indexer_kernels_on_the_host(tmp_path):
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
    assert cxx, "no C++ compiler (g++ or clang++) to build the host simulation"
    exe = tmp_path / "indexer_sim"
    build = subprocess.run(
        [cxx, "-std=c++20", "-O2", "-pthread", "-D__HIP_CPU_RT__", "-D__HIP_DEVICE_COMPILE__",
         f"-I{ROOT / 'engine/src'}", f"-I{ROOT / 'tests/gpu_host_sim'}",
         str(ROOT / "tests/gpu_host_sim/indexer_sim.cpp"), "-o", str(exe)],
        capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, f"building the simulation failed:\n{build.stderr[-3000:]}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    print(run.stdout)
    assert run.returncode == 0 and "0 failure(s)" in run.stdout, run.stdout + run.stderr
    assert run.stdout.count("ok   ") == 14, "a case did not run"
