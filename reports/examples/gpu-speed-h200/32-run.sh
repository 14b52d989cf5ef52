#!/usr/bin/env bash
# Step 32 on the lent GPU (prepared at step 31, not yet run), one stage per argument (carry .whl):
#   bash reports/examples/gpu-speed-h200/32-run.sh moe int8all rocmfp2
# moe: the routed int8 experts several columns a pass in prefill blocks, two shapes that do not
# spill (step 31's four columns with one-row groups lost 10%): 32-moe-cols2.diff (two columns,
# gate_up in the decode's row groups, down in 2-row groups) and, as a variant on top of it,
# 32-moe-cols4-gu2-over-cols2.diff (four columns, gate_up in 2-row groups with 24 bytes spilled,
# down in one-row groups). The tree gets the first diff for the call (taken off again after);
# scripts/gpu-diff-ab: hashes (one per model), decode / verify / 512-token prefill over REPS (2)
# interleaved rounds.
# int8all: DS4KIT_GPU_INT8=auto against all (every Q8_0 matmul on int8 columns: the int8 GEMM
# with tensor cores for prefill; step 23 found it won prefill and lost decode with 32-token
# blocks) with 256-token blocks, 512-token prefill.
# int8prof: DS4KIT_GPU_INT8=all's decode kernels without early launches (per-kernel times: the
# int8 Q8_0 GEMVs against the float ones of 28-profile-nopdl.txt), where step 23 left it.
# chain: the chain order of the int8 Q8_0 walk (this tree: gpu_int8.h chain_dot_q8_0_int8, the
# GEMM a chain a warp): tests/gpu/test_gpu_int8.py (prefill == verify == decode bitwise under
# `all`, against the float64 int8 reference), then auto against all (decode, verify, 512-token
# prefill, REPS rounds) and all's kernels without early launches.
# rocmfp2: the file with ROCMFP2 (type 107) experts, ours only (4 writer processes).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
d=reports/examples/gpu-speed-h200
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/32-device.txt" 2>&1
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    moe) patch -p1 -s <"$d/32-moe-cols2.diff" || exit 4
         PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} VARIANTS="$d/32-moe-cols4-gu2-over-cols2.diff" \
           bash scripts/gpu-diff-ab "$d/32-moe-cols2.diff" "$OUT/moe" hash ab
         patch -R -p1 -s <"$d/32-moe-cols2.diff"
         cp "$OUT/moe/hash.txt" "$OUT/32-moe-hash.txt"; cp "$OUT/moe/ab.txt" "$OUT/32-moe-ab.txt" ;;
    int8all) source scripts/gpu-build "$OUT/build.log" || exit 3
             PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} PY=$PY bash scripts/gpu-env-ab "$OUT/int8all" \
               "DS4KIT_GPU_INT8=auto" "DS4KIT_GPU_INT8=all" >/dev/null 2>&1
             grep -v counters "$OUT/int8all/env-ab.txt" | tee "$OUT/32-int8all-ab.txt" ;;
    int8prof) source scripts/gpu-build "$OUT/build.log" || exit 3
              model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
              DS4KIT_GPU_INT8=all DS4KIT_GPU_PDL=never timeout 150 "$PY" scripts/gpu-decode-profile "$model" \
                >"$OUT/32-int8all-profile-nopdl.txt" 2>&1
              grep -hE "decode median|ds4_matmul" "$OUT/32-int8all-profile-nopdl.txt" | head -20 ;;
    chain) source scripts/gpu-build "$OUT/build.log" || exit 3
           DS4KIT_GPU_REQUIRED=1 DS4KIT_GPU_REPORT_DIR=$OUT timeout 200 "$PY" -m pytest -q -x -p no:cacheprovider \
             tests/gpu/test_gpu_int8.py >"$OUT/32-chain-tests.txt" 2>&1; tail -3 "$OUT/32-chain-tests.txt"
           PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} PY=$PY bash scripts/gpu-env-ab "$OUT/chain" \
             "DS4KIT_GPU_INT8=auto" "DS4KIT_GPU_INT8=all" >/dev/null 2>&1
           grep -v counters "$OUT/chain/env-ab.txt" | tee "$OUT/32-chain-ab.txt"
           model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
           DS4KIT_GPU_INT8=all DS4KIT_GPU_PDL=never timeout 150 "$PY" scripts/gpu-decode-profile "$model" \
             >"$OUT/32-chain-profile-nopdl.txt" 2>&1
           grep -hE "decode median|ds4_matmul|ds4_int8|ds4_gemm" "$OUT/32-chain-profile-nopdl.txt" | head -24
           [ "${AUTO_PROFILE:-0}" = 1 ] && DS4KIT_GPU_PDL=never timeout 150 "$PY" scripts/gpu-decode-profile "$model" \
             >"$OUT/32-auto-profile-nopdl.txt" 2>&1 && grep -hE "decode median|ds4_matmul" "$OUT/32-auto-profile-nopdl.txt" | head -14 ;;
    rocmfp2) source scripts/gpu-build "$OUT/build.log" || exit 3
             model=$(SPEED_EXPERTS_TYPE=107 bash scripts/gpu-speed-model /tmp/synth-107) || exit 4
             timeout 150 "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --no-profile >"$OUT/32-rocmfp2.txt" 2>&1
             grep -hE "^cuda|decode median|verify ms" "$OUT/32-rocmfp2.txt" ;;
    *) echo "32-run.sh: unknown stage $stage (moe, int8all, int8prof, chain, rocmfp2)" >&2; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
