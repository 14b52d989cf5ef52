#!/usr/bin/env bash
# Step 24 on the lent GPU, one stage per argument (each device call runs what still fits):
#   bash reports/examples/gpu-speed-h200/24-run.sh build ab profile seam gpu
# ab: DS4KIT_GPU_ATTN_INPUTS fused (the default) against split, interleaved over REPS rounds;
# profile: the default's per-kernel times without early launches (they would count waits).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source scripts/gpu-build "$OUT/build.log" || exit 3
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/24-device.txt" 2>&1
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    build) ;;
    ab) REPS=${REPS:-2} PY=$PY PROFILE_ARGS="--prefill-profile 512" timeout ${AB_TIMEOUT:-400} bash scripts/gpu-env-ab /tmp/ab \
            "DS4KIT_GPU_ATTN_INPUTS=fused" "DS4KIT_GPU_ATTN_INPUTS=split" >/dev/null 2>&1
        cp /tmp/ab/env-ab*.txt "$OUT/" 2>/dev/null; cat "$OUT/env-ab.txt" ;;
    profile) DS4KIT_GPU_PDL=never timeout 200 "$PY" scripts/gpu-decode-profile \
            "$(bash scripts/gpu-speed-model /tmp/synth)" >"$OUT/24-profile-nopdl.txt" 2>&1
            grep -A40 "^kernel " "$OUT/24-profile-nopdl.txt" | head -42 ;;
    seam) DS4KIT_GPU_REPORT_DIR=$OUT timeout 300 "$PY" -m pytest -q tests/gpu/test_gpu_seam.py \
            "tests/gpu/test_gpu_forward.py::test_gpu_fusions_change_no_bit" >"$OUT/24-tests-seam.txt" 2>&1
          tail -5 "$OUT/24-tests-seam.txt" ;;
    gpu) DS4KIT_GPU_REPORT_DIR=$OUT timeout ${GPU_TIMEOUT:-560} "$PY" -m pytest -q tests/gpu ${PYTEST_ARGS:-} \
            >"$OUT/24-tests.txt" 2>&1; tail -15 "$OUT/24-tests.txt" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
