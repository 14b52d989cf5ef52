"""GPU kernels run on the host, a block's threads as host threads (tests/gpu_host_sim/
sim_runtime.h), against plain statements of what they compute, on inputs a GPU run rarely meets:
- gpu_indexer.cu (indexer_sim.cpp): the scores bit for bit against the CPU backend's formula, the
  top-k selection against a stable sort (ties at the cut, -0 beside +0, all equal, 16K rows,
  several tokens a launch);
- gpu_top_k.cu (top_k_sim.cpp): Backend::row_top_k against a stable sort (rows of 1 to 129280
  values, ties, NaN, -0/+0, infinities, k up to 64);
- gpu_hc.cu's collapse kernels and gpu_norm.cu's rms_norm (hc_norm_sim.cpp): hc_collapse,
  hc_collapse then rms_norm, and the collapse-and-norm kernel bit for bit a serial statement of
  the mix sums, the collapse and the norm's tree, rows of 300 to 8192 values, 1 to 16 streams;
- gpu_ops.cu's route and gpu_moe.cu's plan (route_plan_sim.cpp): the experts and weights
  against the CPU backend's formula (biased with ties, hashed, a token outside the hash table),
  the grouping by expert against a stable sort (1 to 400 tokens, up to 2048 experts, an id out
  of range);
- gpu_math.h's block roundings a thread per value (rounding_sim.cpp; compress_rows and the
  indexer transform use them): bit for bit core/numerics.h's serial FP8 and FP4 round trips, and
  the indexer transform kernel bit for bit the CPU backend's row transform.
- gpu_matmul.cu's set kernel (matmul_set_sim.cpp; Backend::matmul_shared_x on the GPU): each
  matrix of a set bit for bit its lone launch (F32, F16, Q8_0; 2 and 6 matrices of different
  rows and lane counts; 1, 3 and 8 columns).
- gpu_moe_int8.cu's experts on int8 columns (int8_experts_sim.cpp) and gpu_matmul_int8.cu's Q8_0
  matmul on them (matmul_int8_sim.cpp): the column quantiser (gpu_int8_columns.cu; strided and
  grouped columns, ties to even) against the reference's statement, the matmul bit for bit the
  stated chain order and near the float64 dot (rows of 3 to 256 blocks, strided grids), every
  column the same bits at 1 to 13 columns, in row groups, grouped calls and sets.
- gpu_gemm_int8.cu's prefill GEMM (gemm_int8_sim.cpp, and gemm_int8_mma_sim.cpp with the
  tensor-core fragments and the mma.sync product as the PTX ISA defines it): every output bit for
  bit the GEMV's, over partial tiles, rows of 3 to 256 blocks (chains without blocks, partial
  steps), all row load widths and a grouped call; and CUDA's two-buffer form (gpu_cp_async.h
  emulated with copies landing as late as the PTX ISA allows, then at issue) on every case it
  takes.
- gpu_attention_inputs.cu (attention_inputs_sim.cpp; Backend::attention_inputs on the GPU): the
  query heads, KV rows and ring bit for bit the six kernels it replaces (rms_norm, rope_tail, the
  FP8 round trip, kv_store), rows of 64 to 1024 values, YaRN, device-word positions, a wrapping ring.
- gpu_moe_int8.cu's plan-and-h kernel (plan_int8_sim.cpp): every output bit for bit the plan
  kernel's and the quantiser's, at 1, 8 and 32 tokens, a part-full quantiser block, a bad id.
- gpu_dot.h's group_reduce, whose last five tree levels run on 32-lane shuffles (group_reduce_sim.cpp,
  with sim_runtime.h's shuffle): bit for bit the tree's definition for groups of 32 to 256 lanes;
  and ds4_matmul_kernel on a strided grid bit for bit a block per row block.
- gpu_norm.cu's rms_norm with int8 columns (norm_int8_sim.cpp, with and without shuffles): its
  rows bit for bit the norm alone's, its codes and scales byte for byte the quantiser's of them
  (rows of 32 to 4096 values, ties at a block's maximum, zeros, 1e18 and 1e-30).
- gpu_moe_gemm_q2k.cu's prefill GEMMs of the routed Q2_K experts (moe_gemm_q2k_sim.cpp, with the
  dp4a sub-block product and with the tensor-core fragments): gate_up with the SwiGLU and down
  bit for bit the decode kernels' (rows of 3 to 16 blocks, partial tiles and steps, 1 to 19
  columns an expert, scales of both signs, both row load widths), and the int8 walks' scale
  decode (gpu_dequant.h q2k_scale_min_fma) against q2k_scale_min's products for every finite f16.
- gpu_attention.cu's head-group and combine kernels (attention_sim.cpp; Backend::attention and
  attention_rows on the GPU): every chunk's maximum, sum and weighted values and every output bit
  for bit a serial statement of the file's order, at 64, 16, 8, 4 and 1 heads a block and one
  token a launch or all (ring, compressed rows all visible or selected, float rows, head sizes
  that are no multiple of 4, chunks cut short, no key), and the statement within 1e-12 of a plain
  float64 softmax.
This checks the kernels' logic on every CI run; their speed and the device's own arithmetic are
tests/gpu's (H200)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SIM = ROOT / "tests" / "gpu_host_sim"
# Each driver and the cases it prints "ok" for.
DRIVERS = [("indexer_sim.cpp", 14), ("top_k_sim.cpp", 6), ("hc_norm_sim.cpp", 9), ("route_plan_sim.cpp", 10),
           ("rounding_sim.cpp", 11), ("matmul_set_sim.cpp", 6),
           ("int8_experts_sim.cpp", 10), ("matmul_int8_sim.cpp", 25),
           ("gemm_int8_sim.cpp", 19), ("gemm_int8_mma_sim.cpp", 19), ("attention_inputs_sim.cpp", 8),
           ("plan_int8_sim.cpp", 5), ("group_reduce_sim.cpp", 9), ("norm_int8_sim.cpp", 12),
           ("norm_int8_sim.cpp -DDS4_GPU_SIM_NO_SHUFFLE", 12),
           ("moe_gemm_q2k_sim.cpp", 8), ("moe_gemm_q2k_sim.cpp -DDS4_MMA_EMULATE", 8), ("attention_sim.cpp", 11)]


@pytest.mark.parametrize("entry, cases", DRIVERS)
def test_kernels_on_the_host(tmp_path, entry, cases):
    driver, *defines = entry.split()  # a driver built with -D flags: the kernels' other paths
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
    assert cxx, "no C++ compiler (g++ or clang++) to build the host simulation"
    exe = tmp_path / Path(driver).stem
    build = subprocess.run(
        [cxx, "-std=c++20", "-O2", "-pthread", "-D__HIP_CPU_RT__", "-D__HIP_DEVICE_COMPILE__", *defines,
         f"-I{ROOT / 'engine/src'}", f"-I{SIM}", str(SIM / driver), "-o", str(exe)],
        capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, f"building {driver} failed:\n{build.stderr[-3000:]}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    print(run.stdout)
    assert run.returncode == 0 and "0 failure(s)" in run.stdout, run.stdout + run.stderr
    assert run.stdout.count("ok   ") == cases, "a case did not run"
