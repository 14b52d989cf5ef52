#!/usr/bin/env bash
# Step 34 on the lent GPU (prepared at step 33; moegemm, profiles, side, rocmfp2 and ncumoe ran at step 34 on an H100), one stage per argument, in the order
# of what they decide (carry .whl and .llama):
#   bash reports/examples/gpu-speed-h200/34-run.sh moegemm side profiles normq lanes ncu rocmfp2
# side: the new default (every Q8_0 matmul on int8 columns, step 33) beside llama.cpp's CUDA
# build on the issue's file in one call (scripts/llama-cuda-bench, ubatch 512 and 2048), with
# ours from scripts/gpu-decode-profile: the ratio the README quotes was an H100's at step 31.
# profiles: the default's kernels without early launches for a decoded token, a verify of 8
# distinct tokens and a 512-token prefill (what is left after the int8 default: the routed
# experts, attention, the small kernels).
# moegemm: the routed Q2_K experts of a prefill block as tensor-core GEMMs (gpu_moe_gemm_q2k.cu,
# written at step 34): one hash with DS4KIT_GPU_MOE_GEMM=auto and never (the decode kernels'
# bits), decode / prefill / verify interleaved, then test_gpu_int8's bit checks.
# ncumoe: Nsight Compute on the prefill's expert GEMMs and attention chunks (speed of light,
# stalls, and the gate_up GEMM's stalls by SASS instruction through scripts/ncu-stalls).
# normq, lanes, ncu, rocmfp2: 33-run.sh's stages, not run at step 33 (the norms' int8 columns
# alone, two lanes a chain, Nsight Compute on the int8 GEMVs, the ROCMFP2 file).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
d=reports/examples/gpu-speed-h200
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/34-device.txt" 2>&1
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    side) source scripts/gpu-build "$OUT/build.log" || exit 3
          model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
          timeout 200 "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --no-profile >"$OUT/34-ours.txt" 2>&1
          grep -hE "decode median|verify ms" "$OUT/34-ours.txt"
          timeout 300 bash scripts/llama-cuda-bench "$model" "$OUT/llama" | tee "$OUT/34-llama.txt" ;;
    profiles) source scripts/gpu-build "$OUT/build.log" || exit 3
              model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
              DS4KIT_GPU_PDL=never timeout 300 "$PY" scripts/gpu-decode-profile "$model" --prompt 512 \
                --verify-profile 8 --prefill-profile 512 --json "$OUT/34-profiles.json" >"$OUT/34-profiles.txt" 2>&1
              grep -E "^ds4|^verify|^prefill|busy" "$OUT/34-profiles.txt" | head -80 ;;
    moegemm) source scripts/gpu-build "$OUT/build.log" || exit 3
             model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
             for v in auto never; do
               echo "$v: $(DS4KIT_GPU_MOE_GEMM=$v "$PY" scripts/logits-hash "$model" --backend cuda --tokens 60 2>&1 | tail -1)"
             done | tee "$OUT/34-moegemm-hash.txt"
             PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} bash scripts/gpu-env-ab "$OUT/moegemm" \
               "DS4KIT_GPU_MOE_GEMM=auto" "DS4KIT_GPU_MOE_GEMM=never" >/dev/null 2>&1
             grep -v counters "$OUT/moegemm/env-ab.txt" | tee "$OUT/34-moegemm-ab.txt"
             timeout ${TESTS_TIMEOUT:-400} "$PY" -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_int8.py \
               >"$OUT/34-moegemm-tests.txt" 2>&1
             tail -3 "$OUT/34-moegemm-tests.txt" ;;
    ncumoe) source scripts/gpu-build "$OUT/build.log" || exit 3
            model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
            k="regex:ds4_moe_(gate_up|down)_q2k_gemm_kernel|ds4_attention_chunk_kernel"
            timeout 200 ncu --clock-control none -k "$k" --launch-skip 2 --launch-count 3 \
              --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
              --section Occupancy --section LaunchStats --section InstructionStats \
              "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --tokens 2 --no-verify --no-profile \
              >"$OUT/34-ncu-moe-gemm.txt" 2>&1
            grep -E "ds4_|Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Executed Instructions  |No Eligible|Achieved Occupancy|Registers Per" \
              "$OUT/34-ncu-moe-gemm.txt" | head -60
            timeout 200 ncu --clock-control none -k "regex:ds4_moe_gate_up_q2k_gemm_kernel" --launch-skip 2 --launch-count 1 \
              --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
              "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --tokens 2 --no-verify --no-profile \
              >"$OUT/34-ncu-src-moe-gemm.csv" 2>&1
            "$PY" scripts/ncu-stalls "$OUT/34-ncu-src-moe-gemm.csv" >"$OUT/34-ncu-src-moe-gemm.txt" 2>&1
            head -40 "$OUT/34-ncu-src-moe-gemm.txt" ;;
    normq | lanes | ncu | rocmfp2) bash "$d/33-run.sh" "$stage" ;;
    *) echo "34-run.sh: unknown stage $stage (side, profiles, moegemm, ncumoe, normq, lanes, ncu, rocmfp2)" >&2; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
