#!/usr/bin/env bash
# Step 25 on the lent GPU, one stage per argument (each device call runs what still fits):
#   bash reports/examples/gpu-speed-h200/25-run.sh build seam ab profile
#   bash reports/examples/gpu-speed-h200/25-run.sh build gpu
# Earlier forms, their files kept: 25a-* (the post computed by every row group; defaults against
# both split), 25b-* (a thread a value; defaults, the post split, both split and the attention a
# block per head). Run 25c: the plan with small shared memory, the mix's weights loaded first.
# After 25c the post left the mix kernel again (93f65a8): DS4KIT_GPU_HC_POST is no longer read,
# so the ab stage's settings with it now time the defaults.
# seam: the per-op seam and the fusion checks; ab: the defaults (hc_post in the next mix, the
# moe plan in h's quantiser launch) against each split and both, interleaved over REPS rounds;
# profile: the defaults' per-kernel times without early launches (they would count waits); gpu:
# tests/gpu.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source scripts/gpu-build "$OUT/build.log" || exit 3
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/25-device.txt" 2>&1
ab() {  # ab NAME SETTING...
  local name=$1
  shift
  rm -rf /tmp/ab
  REPS=${REPS:-2} PY=$PY timeout ${AB_TIMEOUT:-330} bash scripts/gpu-env-ab /tmp/ab "$@" >/dev/null 2>&1
  cp /tmp/ab/env-ab.txt "$OUT/25-$name-env-ab.txt"
  for f in /tmp/ab/env-ab-*.txt; do echo "==> $(basename "$f")"; cat "$f"; done >"$OUT/25-$name-runs.txt"
  cat "$OUT/25-$name-env-ab.txt"  # (the device call returns a few files: the runs go in one)
}
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    build) ;;
    seam) DS4KIT_GPU_REPORT_DIR=$OUT timeout 300 "$PY" -m pytest -q tests/gpu/test_gpu_seam.py \
            "tests/gpu/test_gpu_forward.py::test_gpu_fusions_change_no_bit" \
            "tests/gpu/test_gpu_int8.py::test_gpu_int8_moe_plan_with_h_changes_no_bit" >"$OUT/25-tests-seam.txt" 2>&1
          tail -5 "$OUT/25-tests-seam.txt" ;;
    ab) ab fusions "" "DS4KIT_GPU_HC_POST=split" "DS4KIT_GPU_MOE_PLAN=split" \
          "DS4KIT_GPU_HC_POST=split DS4KIT_GPU_MOE_PLAN=split" ;;
    profile) DS4KIT_GPU_PDL=never timeout 200 "$PY" scripts/gpu-decode-profile \
            "$(bash scripts/gpu-speed-model /tmp/synth)" >"$OUT/25-profile-nopdl.txt" 2>&1
            grep -A40 "^kernel " "$OUT/25-profile-nopdl.txt" | head -42 ;;
    gpu) DS4KIT_GPU_REPORT_DIR=$OUT timeout ${GPU_TIMEOUT:-400} "$PY" -m pytest -q tests/gpu ${PYTEST_ARGS:-} \
            >"$OUT/25-tests.txt" 2>&1; tail -15 "$OUT/25-tests.txt" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
