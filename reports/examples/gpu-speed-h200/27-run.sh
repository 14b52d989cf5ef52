#!/usr/bin/env bash
# Step 27 on the lent GPU, one stage per argument (each device call runs what still fits):
#   bash reports/examples/gpu-speed-h200/27-run.sh build base hash ab
#   bash reports/examples/gpu-speed-h200/27-run.sh build seam gpu speed ncu
# Three builds: C, this tree (group_reduce's last five levels on shuffles, one-column matmuls on
# a strided grid, the dot's fast path compiled with x 16-byte aligned); B, the tree without the
# last (27-x4.diff taken back); A, the code before step 27 (27-change.diff taken back too).
# build: C, its ds4kit package kept in build/vC; base: B and A (A in build/gpu-base), kept in
# build/vB and build/vA, then the tree and C's in-place module restored; hash: scripts/logits-hash
# of the builds (and of C with DS4KIT_GPU_MATMUL_GRID=full) on a small model and on the speed
# file (the changes claim no bit moves); ab: decode, verify and prefill of A, B, C and C with full
# grids, interleaved over REPS rounds; seam, gpu: the per-op seam checks and tests/gpu with this
# tree; speed: the speed file's decode, verify and prefill; ncu: Nsight Compute on the first
# decoded token's Q8_0 GEMVs (as step 26's). Each stage's output goes to one file.
set -u
OUT=${OUT:-/tmp/out}
here=reports/examples/gpu-speed-h200
mkdir -p "$OUT"
source scripts/gpu-build "$OUT/build.log" || exit 3
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/27-device.txt" 2>&1
keep() { rm -rf "$1" && mkdir -p "$1" && cp -r ds4kit "$1/"; }  # a build's package, to run by PYTHONPATH
q8_gemvs='regex:ds4_matmul_kernel<\(int\)1, \(int\)[14], \(unsigned int\)8>'  # ncu's demangled names
small=/tmp/small-q8.gguf
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    build) keep $PWD/build/vC ;;
    base) patch -s -R -p1 <"$here/27-x4.diff" || exit 4
          source scripts/gpu-build "$OUT/build-b.log" || exit 3
          keep $PWD/build/vB
          patch -s -R -p1 <"$here/27-change.diff" || exit 4
          DS4KIT_BUILD_DIR=build/gpu-base source scripts/gpu-build "$OUT/build-base.log" || exit 3
          keep $PWD/build/vA
          patch -s -p1 <"$here/27-change.diff" && patch -s -p1 <"$here/27-x4.diff" || exit 4
          cp $PWD/build/vC/ds4kit/_engine*.so ds4kit/ ;;
    hash) [ -f "$small" ] || "$PY" -m ds4kit model synth "$small" --preset medium --types attn=Q8_0 --types output=Q8_0 \
            --no-progress --out /tmp/small-synth >/dev/null 2>&1
          speed_model=$(bash scripts/gpu-speed-model /tmp/synth)
          { for m in "$small" "$speed_model"; do
              tok=200; [ "$m" = "$speed_model" ] && tok=60
              for v in A B C; do
                echo "$v $(basename "$m"): $(PYTHONPATH=$PWD/build/v$v:$PYTHONPATH "$PY" scripts/logits-hash "$m" --backend cuda --tokens $tok 2>&1 | tail -1)"
              done
              echo "C grid=full $(basename "$m"): $(DS4KIT_GPU_MATMUL_GRID=full PYTHONPATH=$PWD/build/vC:$PYTHONPATH "$PY" scripts/logits-hash "$m" --backend cuda --tokens $tok 2>&1 | tail -1)"
            done; } >"$OUT/27-hash.txt" 2>&1
          cat "$OUT/27-hash.txt" ;;
    ab) rm -rf /tmp/ab
        REPS=${REPS:-2} PY=$PY timeout ${AB_TIMEOUT:-420} bash scripts/gpu-env-ab /tmp/ab "PYTHONPATH=$PWD/build/vA:$PYTHONPATH" \
          "PYTHONPATH=$PWD/build/vB:$PYTHONPATH" "PYTHONPATH=$PWD/build/vC:$PYTHONPATH DS4KIT_GPU_MATMUL_GRID=full" \
          "PYTHONPATH=$PWD/build/vC:$PYTHONPATH" >/dev/null 2>&1
        { cat /tmp/ab/env-ab.txt | sed "s|$PYTHONPATH|...|g"; for f in /tmp/ab/env-ab-*.txt; do echo "==> $(basename "$f")"; cat "$f"; done; } \
          >"$OUT/27-shuffle-grid-ab.txt"
        head -30 "$OUT/27-shuffle-grid-ab.txt" ;;
    seam) DS4KIT_GPU_REPORT_DIR=/tmp/seam timeout 300 "$PY" -m pytest -q tests/gpu/test_gpu_seam.py \
            "tests/gpu/test_gpu_forward.py::test_gpu_fusions_change_no_bit" \
            "tests/gpu/test_gpu_forward.py::test_gpu_matmul_grid_changes_no_bit" >"$OUT/27-tests-seam.txt" 2>&1
          tail -5 "$OUT/27-tests-seam.txt" ;;
    ncu) model=$(bash scripts/gpu-speed-model /tmp/synth)
         timeout ${NCU_TIMEOUT:-240} ncu --clock-control none --kernel-name-base demangled \
           -k "$q8_gemvs" --launch-count 25 \
           --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
           --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats \
           "$PY" scripts/gpu-decode-profile "$model" --prompt 8 --tokens 2 --no-verify --no-profile \
           >"$OUT/27-ncu-q8-gemv.txt" 2>&1
         grep -E "ds4_matmul_kernel<|Duration|DRAM Throughput|Executed Instructions  |No Eligible|Achieved Occupancy" \
           "$OUT/27-ncu-q8-gemv.txt" | head -60 ;;
    speed) timeout 200 "$PY" scripts/gpu-decode-profile "$(bash scripts/gpu-speed-model /tmp/synth)" --no-profile \
             >"$OUT/27-speed.txt" 2>&1; cat "$OUT/27-speed.txt" ;;
    gpu) DS4KIT_GPU_REPORT_DIR=/tmp/gpurep timeout ${GPU_TIMEOUT:-400} "$PY" -m pytest -q tests/gpu ${PYTEST_ARGS:-} \
            >"$OUT/27-tests.txt" 2>&1; tail -15 "$OUT/27-tests.txt" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
