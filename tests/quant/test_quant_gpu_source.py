"""The CUDA/HIP ROCmFP dequantise kernel (engine/src/backend/gpu/dequant_rocmfp.cu): it must
compile for sm_90 (nvcc) and gfx1151 (clang HIP, device only, no ROCm install),
and where a CUDA GPU exists its output must be bitwise equal to the numpy spec
reference. Each check is skipped (with the reason) when its tool is missing."""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from quant_rocmfp_reference import LAYOUT, dequantize as ref_dequantize

REPO = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).with_name("quant_gpu_harness.cu")
SRC = REPO / "engine" / "src" / "backend" / "gpu" / "dequant_rocmfp.cu"
LAUNCH = REPO / "engine" / "src" / "backend" / "gpu" / "gpu_launch.cu"  # ds4_launch's pdl_launches()
INC = REPO / "engine" / "src"


def _run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, f"{' '.join(map(str, cmd))}\n{out.stderr[-3000:]}"


def test_compiles_for_cuda_sm90(tmp_path):
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    obj = tmp_path / "dequant_rocmfp.o"
    _run(["nvcc", "-std=c++17", "-arch=sm_90", "-c", SRC, "-I", INC, "-o", obj])
    syms = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
    assert "ds4_dequant_rocmfp_kernel" in syms and "ds4_gpu_dequant_rocmfp" in syms
    # The GPU comparison harness must build too (it only runs where a GPU exists).
    _run(["nvcc", "-std=c++17", "-arch=sm_90", "-I", INC, SRC, LAUNCH, HARNESS, "-o", tmp_path / "harness"])


def test_compiles_for_hip_gfx1151(tmp_path):
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    if not clang:
        pytest.skip("clang++ not installed")
    # -nogpuinc: no ROCm headers here (gpu_compat.h supplies the keywords);
    # -S: device assembly, since linking a code object needs lld.
    asm = tmp_path / "dequant_rocmfp.s"
    _run([clang, "-x", "hip", "--offload-arch=gfx1151", "--cuda-device-only", "-nogpulib", "-nogpuinc",
          "-std=c++17", "-I", INC, "-S", SRC, "-o", asm])
    text = asm.read_text()
    assert "ds4_dequant_rocmfp_kernel" in text and "amdgcn" in text


def _have_cuda_gpu() -> bool:
    if not shutil.which("nvcc") or not shutil.which("nvidia-smi"):
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _have_cuda_gpu(), reason="no CUDA GPU (nvcc + nvidia-smi)")
def test_gpu_output_matches_reference(tmp_path):
    exe = tmp_path / "harness"
    _run(["nvcc", "-std=c++17", "-arch=native", "-I", INC, SRC, LAUNCH, HARNESS, "-o", exe])
    rng = np.random.default_rng(5)
    for type_id, (block_bytes, _, _) in sorted(LAYOUT.items()):
        raw = rng.integers(0, 256, size=300 * block_bytes, dtype=np.uint8)
        (tmp_path / "in.bin").write_bytes(raw.tobytes())
        _run([exe, str(type_id), str(300 * 32), tmp_path / "in.bin", tmp_path / "out.bin"])
        got = np.fromfile(tmp_path / "out.bin", dtype=np.float32)
        np.testing.assert_array_equal(got.view(np.uint32), ref_dequantize(raw, type_id).view(np.uint32))
