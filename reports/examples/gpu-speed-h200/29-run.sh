#!/usr/bin/env bash
# Step 29 on the lent GPU, one stage per argument (each device call runs what still fits):
#   bash reports/examples/gpu-speed-h200/29-run.sh ncu-moe
#   bash reports/examples/gpu-speed-h200/29-run.sh side
#   bash reports/examples/gpu-speed-h200/29-run.sh side2 tests
#   bash reports/examples/gpu-speed-h200/29-run.sh ncu-src
#   bash reports/examples/gpu-speed-h200/29-run.sh prefetch
# ncu-moe: Nsight Compute on the first decoded token's expert kernels (the routed Q2_K gate_up
# and down on int8 columns, the Q8_0 shared expert's), after the 8-token prefill's launches:
# what bounds them (DRAM, L1 wavefronts, latency) before changing their walk.
# side: two changes against the code before them, by scripts/gpu-diff-ab's hash stage (before
# and after on the medium model and the speed file; neither claims a bit moves) on the diffs
# together (29-side-streams.diff: a second side stream for the shared expert and, inside steps,
# the compressors, which the block runner now calls before the query's matrices;
# 29-expert-grid.diff: the int8 expert kernels of one column a pass on a strided grid in decode
# and verify), then four settings interleaved over REPS rounds: before; after with
# DS4KIT_GPU_SIDE_STREAM=1 (step 28's streams: the expert grid alone); after with =shared (two
# streams, the compressors on the main one); after (both).
# side2 (the expert grid not kept: verify of 8 tokens 7.0 -> 12.1 ms, decode unchanged): the side
# streams alone against the code before them, hashes and three settings (before; after with
# DS4KIT_GPU_SIDE_STREAM=1; after). tests: tests/gpu's forward and step-graph files with the
# tree (its module is the after build's once side2 ran).
# ncu-src: where the decode's routed Q2_K gate_up and down warps wait, instruction by instruction
# (Nsight Compute's source page, SASS with stall samples; one launch of each in a bias-routed
# layer of the first decoded token), for the next walk's design.
# prefetch: 29-prefetch.diff (the one-column matmuls and sets ask the L2 for their first row
# block before the entry's wait, and for the next row block of their strided walk while one
# computes) against the code before it, and with 29-expert-prefetch.diff on top (the routed int8
# experts on a strided grid in decode only, up to 8 slots, each block asking the L2 for its next
# row block while one computes; the shared expert's kernels ask for their rows before the wait):
# scripts/gpu-diff-ab hash ab with VARIANTS. Not run at step 29 (no device time left): apply
# 29-prefetch.diff first (git apply), then this stage.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
case " $* " in  # the stages that run this tree's in-place build
  *" ncu-moe "* | *" ncu-src "* | *" speed "*) source scripts/gpu-build "$OUT/build.log" || exit 3 ;;
  *) PY=${PYTHON:-python3} ;;
esac
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/29-device.txt" 2>&1
moe='regex:ds4_moe_(gate_up|down)_int8_kernel'
# diff_and_settings NAME DIFF LIMIT SETTING...: scripts/gpu-diff-ab's builds and hashes of DIFF
# (29-NAME-hash.txt), then those builds timed under each SETTING ("before" or "after", then
# VAR=value ...) interleaved over REPS rounds within LIMIT (or AB_TIMEOUT) seconds (29-NAME-ab.txt).
diff_and_settings() {
  local name=$1 diff=$2 limit=$3 s build settings=()
  shift 3
  bash scripts/gpu-diff-ab "$diff" "$OUT/$name" hash || exit 5
  cp "$OUT/$name/hash.txt" "$OUT/29-$name-hash.txt"
  export PYTHONPATH="/tmp/ds4kit-site${PYTHONPATH:+:$PYTHONPATH}"  # gpu-diff-ab installed the wheels there
  for s in "$@"; do
    build=${s%% *}
    settings+=("PYTHONPATH=$PWD/build/v-$build:$PYTHONPATH${s#"$build"}")
  done
  rm -rf /tmp/ab
  REPS=${REPS:-3} PY=$PY timeout "${AB_TIMEOUT:-$limit}" bash scripts/gpu-env-ab /tmp/ab "${settings[@]}" >/dev/null 2>&1
  { sed -e "s|PYTHONPATH=$PWD/build/v-\([a-z]*\):[^ ]*|\1|" /tmp/ab/env-ab.txt; for f in /tmp/ab/env-ab-*.txt; do
      echo "==> $(basename "$f")"; cat "$f"; done; } >"$OUT/29-$name-ab.txt"
  grep -v counters "$OUT/29-$name-ab.txt" | head -$((1 + 7 * $#))
}
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    ncu-moe) model=$(bash scripts/gpu-speed-model /tmp/synth)
         timeout ${NCU_TIMEOUT:-300} ncu --clock-control none --kernel-name-base demangled \
           -k "$moe" --launch-skip ${NCU_SKIP:-32} --launch-count ${NCU_COUNT:-16} \
           --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
           --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
           --section InstructionStats --section SourceCounters \
           "$PY" scripts/gpu-decode-profile "$model" --prompt 8 --tokens 2 --no-verify --no-profile \
           >"$OUT/29-ncu-moe.txt" 2>&1
         grep -E "ds4_moe_|Duration|DRAM Throughput|L1/TEX Cache Throughput|Executed Instructions  |No Eligible|Achieved Occupancy|Grid Size|Stall|excessive" \
           "$OUT/29-ncu-moe.txt" | head -120 ;;
    side) cat reports/examples/gpu-speed-h200/29-side-streams.diff reports/examples/gpu-speed-h200/29-expert-grid.diff \
            >/tmp/29-both.diff
          diff_and_settings side /tmp/29-both.diff 420 before "after DS4KIT_GPU_SIDE_STREAM=1" \
            "after DS4KIT_GPU_SIDE_STREAM=shared" after ;;
    side2) diff_and_settings side2 reports/examples/gpu-speed-h200/29-side-streams.diff 300 before \
             "after DS4KIT_GPU_SIDE_STREAM=1" after ;;
    tests) DS4KIT_GPU_REPORT_DIR=/tmp/gpurep timeout ${GPU_TIMEOUT:-200} "$PY" -m pytest -q tests/gpu/test_gpu_forward.py \
             tests/gpu/test_gpu_step_graphs.py >"$OUT/29-tests.txt" 2>&1; tail -6 "$OUT/29-tests.txt" ;;
    ncu-src) model=$(bash scripts/gpu-speed-model /tmp/synth)
         for k in gate_up down; do
           timeout 200 ncu --clock-control none --kernel-name-base demangled \
             -k "regex:ds4_moe_${k}_int8_kernel<\(int\)[24], \(int\)1, \(unsigned int\)10>" --launch-skip 19 --launch-count 1 \
             --section WarpStateStats --section SourceCounters --section SpeedOfLight --page source --print-source sass --csv \
             "$PY" scripts/gpu-decode-profile "$model" --prompt 8 --tokens 2 --no-verify --no-profile \
             >"$OUT/29-ncu-src-$k.csv" 2>&1
           echo "$k: $(wc -l <"$OUT/29-ncu-src-$k.csv") lines"
         done
         "$PY" scripts/ncu-stalls "$OUT"/29-ncu-src-gate_up.csv "$OUT"/29-ncu-src-down.csv >"$OUT/29-ncu-src.txt" ;;
    prefetch) VARIANTS=reports/examples/gpu-speed-h200/29-expert-prefetch.diff \
                bash scripts/gpu-diff-ab reports/examples/gpu-speed-h200/29-prefetch.diff "$OUT/prefetch" hash ab || exit 5
          cp "$OUT/prefetch/hash.txt" "$OUT/29-prefetch-hash.txt"; cp "$OUT/prefetch/ab.txt" "$OUT/29-prefetch-ab.txt" ;;
    speed) timeout 200 "$PY" scripts/gpu-decode-profile "$(bash scripts/gpu-speed-model /tmp/synth)" --no-profile \
             >"$OUT/29-speed.txt" 2>&1; cat "$OUT/29-speed.txt" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
