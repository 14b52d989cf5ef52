#!/usr/bin/env bash
# Step 23 on the H200, one stage per argument (each device call runs what still fits):
#   bash reports/examples/gpu-speed-h200/23-run.sh build int8 ab gpu
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source scripts/gpu-build "$OUT/build.log" || exit 3
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    build) ;;
    int8) DS4KIT_GPU_REPORT_DIR=$OUT timeout 300 "$PY" -m pytest -q -x tests/gpu/test_gpu_int8.py \
            >"$OUT/23-tests-int8.txt" 2>&1; tail -3 "$OUT/23-tests-int8.txt" ;;
    ab) REPS=${REPS:-1} PY=$PY PROFILE_ARGS="--prefill-profile 512" timeout 500 bash scripts/gpu-env-ab /tmp/ab \
            "DS4KIT_GPU_INT8=shared" "DS4KIT_GPU_INT8=all" ${AB_GEMM_NEVER:+"DS4KIT_GPU_INT8=all DS4KIT_GPU_INT8_GEMM=never"} \
            >/dev/null 2>&1; cp /tmp/ab/env-ab*.txt "$OUT/" 2>/dev/null; cat "$OUT/env-ab.txt" ;;
    profile) DS4KIT_GPU_INT8=all DS4KIT_GPU_PDL=never timeout 200 "$PY" scripts/gpu-decode-profile \
            "$(bash scripts/gpu-speed-model /tmp/synth)" --prefill-profile 512 >"$OUT/23-profile-all-nopdl.txt" 2>&1
            grep -A14 "^kernel " "$OUT/23-profile-all-nopdl.txt" | head -16 ;;
    gpu) DS4KIT_GPU_REPORT_DIR=$OUT timeout ${GPU_TIMEOUT:-560} "$PY" -m pytest -q tests/gpu ${PYTEST_ARGS:-} \
            >"$OUT/23-tests.txt" 2>&1; tail -15 "$OUT/23-tests.txt" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
