#!/usr/bin/env bash
# Step 26 on the lent GPU, one stage per argument (each device call runs what still fits):
#   bash reports/examples/gpu-speed-h200/26-run.sh build seam ab ncu
#   bash reports/examples/gpu-speed-h200/26-run.sh build ncu-instructions   (DS4KIT_GPU_PREFETCH=never)
#   bash reports/examples/gpu-speed-h200/26-run.sh build rows
#   bash reports/examples/gpu-speed-h200/26-run.sh build gpu speed
# seam: the per-op seam and the prefetch's no-bit check; ab: the weight kernels' L2 prefetch of
# their block's rows before the wait (the default) against DS4KIT_GPU_PREFETCH=never,
# interleaved over REPS rounds; ncu: Nsight Compute on the first decoded token's Q8_0 GEMVs
# (q_b, wo_a, wo_b of each layer, then the head; launches serialised, no early start); rows:
# groups of 4 rows from 4096 rows (wo_b) against the 8192 of the default (the choice
# DS4KIT_GPU_ROW_GROUPS=rows4096 existed for this run only; the rule then took 4096 for calls of
# several columns); speed: decode, verify and prefill of the final code; gpu:
# tests/gpu. Each stage's output goes to one file (the device call returns a few).
# The first call's ncu stage matched nothing (its regex spelled the names as the profiler table
# does, not as ncu demangles them); 26-ncu-q8-gemv.txt is from the next call, with q8_gemvs below.
# After the run the prefetch was taken out (DS4KIT_GPU_PREFETCH is no longer read, so `ab` now
# times the defaults twice) and `rows` needs the temporary choice rows4096, which is gone too.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source scripts/gpu-build "$OUT/build.log" || exit 3
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/26-device.txt" 2>&1
q8_gemvs='regex:ds4_matmul_kernel<\(int\)1, \(int\)[14], \(unsigned int\)8>'  # ncu's demangled names
ab() {  # ab NAME SETTING...: gpu-env-ab's rounds, its summary then each run, in 26-NAME-ab.txt
  local name=$1
  shift
  rm -rf /tmp/ab
  REPS=${REPS:-2} PY=$PY timeout ${AB_TIMEOUT:-300} bash scripts/gpu-env-ab /tmp/ab "$@" >/dev/null 2>&1
  { cat /tmp/ab/env-ab.txt; for f in /tmp/ab/env-ab-*.txt; do echo "==> $(basename "$f")"; cat "$f"; done; } \
    >"$OUT/26-$name-ab.txt"
  head -30 "$OUT/26-$name-ab.txt"
}
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    build) ;;
    seam) DS4KIT_GPU_REPORT_DIR=/tmp/seam timeout 300 "$PY" -m pytest -q tests/gpu/test_gpu_seam.py \
            "tests/gpu/test_gpu_forward.py::test_gpu_fusions_change_no_bit" >"$OUT/26-tests-seam.txt" 2>&1
          tail -5 "$OUT/26-tests-seam.txt" ;;
    ab) ab prefetch "" "DS4KIT_GPU_PREFETCH=never" ;;
    rows) REPS=${REPS:-3} AB_TIMEOUT=${AB_TIMEOUT:-400} ab rows4096 "" "DS4KIT_GPU_ROW_GROUPS=rows4096" ;;
    ncu) model=$(bash scripts/gpu-speed-model /tmp/synth)
         timeout ${NCU_TIMEOUT:-240} ncu --clock-control none --kernel-name-base demangled \
           -k "$q8_gemvs" --launch-count 25 \
           --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
           --section WarpStateStats --section Occupancy --section LaunchStats \
           "$PY" scripts/gpu-decode-profile "$model" --prompt 8 --tokens 2 --no-verify --no-profile \
           >"$OUT/26-ncu-q8-gemv.txt" 2>&1
         grep -E "ds4_matmul_kernel<|Duration|DRAM Throughput|Memory Throughput  |No Eligible|Achieved Occupancy" \
           "$OUT/26-ncu-q8-gemv.txt" | head -60 ;;
    ncu-instructions)  # q_b, wo_a, wo_b of layer 0 (the head's two launches skipped)
         model=$(bash scripts/gpu-speed-model /tmp/synth)
         timeout ${NCU_TIMEOUT:-200} ncu --clock-control none --kernel-name-base demangled -k "$q8_gemvs" \
           --launch-skip 2 --launch-count 3 --section InstructionStats --section SourceCounters \
           --section WarpStateStats --print-details all \
           "$PY" scripts/gpu-decode-profile "$model" --prompt 8 --tokens 2 --no-verify --no-profile \
           >"$OUT/26-ncu-q8-gemv-instructions.txt" 2>&1 ;;
    speed) timeout 200 "$PY" scripts/gpu-decode-profile "$(bash scripts/gpu-speed-model /tmp/synth)" --no-profile \
             >"$OUT/26-speed.txt" 2>&1; cat "$OUT/26-speed.txt" ;;
    gpu) DS4KIT_GPU_REPORT_DIR=/tmp/gpurep timeout ${GPU_TIMEOUT:-400} "$PY" -m pytest -q tests/gpu ${PYTEST_ARGS:-} \
            >"$OUT/26-tests.txt" 2>&1; tail -15 "$OUT/26-tests.txt" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
