"""core/numerics.h on the GPU against the host, bit for bit: the F16 round trip of every
float, D's FP8-E4M3 and FP4-E2M1 block round trips (random magnitudes, arbitrary bit
patterns incl. NaN/inf/subnormals, grid ties) and the Hadamard transform. The RoPE angles
call pow/log from each side's math library (glibc on the host, CUDA's or ROCm's on the
device), so they are held to ROPE_MAX_ULP instead: CUDA documents pow to 2 ulp, and the
position and YaRN products after it add at most a rounding each.

The harness (gpu_numerics_harness.cu) links the library's probe kernel
(engine/src/backend/gpu/gpu_numerics_probe.cu). It is built with nvcc; the run needs a CUDA
GPU, or DS4KIT_HIP_CPU_DIR (a HIP-CPU checkout: the kernels then run on the host, every
4099th float for the F16 sweep). Results go to $DS4KIT_GPU_REPORT_DIR/gpu-numerics.txt."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INC = REPO / "engine" / "src"
PROBE = INC / "backend" / "gpu" / "gpu_numerics_probe.cu"
HARNESS = Path(__file__).with_name("gpu_numerics_harness.cu")
LAUNCH = INC / "backend" / "gpu" / "gpu_launch.cu"  # ds4_launch's pdl_launches()
ROPE_MAX_ULP = 8


def _run(cmd, timeout=600):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    assert out.returncode in (0, 1), f"{' '.join(map(str, cmd))}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


def _have_cuda_gpu() -> bool:
    if not shutil.which("nvcc") or not shutil.which("nvidia-smi"):
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


def _nvcc(arch, exe):
    return ["nvcc", "-std=c++17", f"-arch={arch}", "--fmad=false", "-I", INC, PROBE, LAUNCH, HARNESS, "-o", exe]


def test_harness_compiles_for_sm90(tmp_path):
    if not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    out = subprocess.run([str(c) for c in _nvcc("sm_90", tmp_path / "h")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


def _check(stdout: str):
    report = os.environ.get("DS4KIT_GPU_REPORT_DIR")
    if report:
        Path(report).mkdir(parents=True, exist_ok=True)
        (Path(report) / "gpu-numerics.txt").write_text(stdout)
    lines = {m.group(1): m for m in re.finditer(r"^(\w+) cases=(\d+) mismatches=(\d+)(?: max_ulp=(\d+))?$",
                                                stdout, re.M)}
    assert {"f16", "fp8_n64", "fp8_n48", "fp4", "hadamard_n32", "hadamard_n128", "hadamard_n512", "hadamard_block_n32",
            "hadamard_block_n128", "hadamard_block_n512", "int_to_float", "rope"} <= set(lines)
    for op, m in lines.items():
        assert int(m.group(2)) > 0, op
        if op == "rope":
            assert int(m.group(4)) <= ROPE_MAX_ULP, stdout
        else:
            assert int(m.group(3)) == 0, stdout


def test_device_numerics_match_host_cuda(tmp_path):
    if not _have_cuda_gpu():
        if os.environ.get("DS4KIT_GPU_REQUIRED") == "1":
            pytest.fail("DS4KIT_GPU_REQUIRED=1 but no CUDA GPU (nvcc + nvidia-smi -L)")
        pytest.skip("no CUDA GPU (nvcc + nvidia-smi)")
    exe = tmp_path / "harness"
    subprocess.run([str(c) for c in _nvcc("native", exe)], check=True, timeout=300)
    _check(_run([exe, "1"]).stdout)


@pytest.mark.skipif(not os.environ.get("DS4KIT_HIP_CPU_DIR"), reason="DS4KIT_HIP_CPU_DIR not set (HIP-CPU emulation)")
def test_device_numerics_match_host_hip_cpu(tmp_path):
    hip_cpu = Path(os.environ["DS4KIT_HIP_CPU_DIR"]) / "include"
    exe = tmp_path / "harness"
    cxx = os.environ.get("CXX", "g++")
    subprocess.run([cxx, "-std=c++17", "-O2", "-ffp-contract=off", "-x", "c++", "-include", "hip/hip_runtime.h",
                    "-isystem", str(hip_cpu), "-I", str(INC), str(PROBE), str(HARNESS), "-o", str(exe), "-ltbb",
                    "-lpthread"], check=True, timeout=600)
    _check(_run([exe, "4099"], timeout=1200).stdout)
