#!/usr/bin/env bash
# Step 34 on the lent GPU (prepared at step 33, not yet run), one stage per argument, in the order
# of what they decide (carry .whl and .llama):
#   bash reports/examples/gpu-speed-h200/34-run.sh side profiles normq lanes ncu rocmfp2
# side: the new default (every Q8_0 matmul on int8 columns, step 33) beside llama.cpp's CUDA
# build on the file in one call (scripts/llama-cuda-bench, ubatch 512 and 2048), with
# ours from scripts/gpu-decode-profile: the ratio the README quotes was an H100's at step 31.
# profiles: the default's kernels without early launches for a decoded token, a verify of 8
# distinct tokens and a 512-token prefill (what is left after the int8 default: the routed
# experts, attention, the small kernels).
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
    normq | lanes | ncu | rocmfp2) bash "$d/33-run.sh" "$stage" ;;
    *) echo "34-run.sh: unknown stage $stage (side, profiles, normq, lanes, ncu, rocmfp2)" >&2; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
