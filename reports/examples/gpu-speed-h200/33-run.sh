#!/usr/bin/env bash
# Step 33 on the lent GPU (prepared at step 32; int8 and verify ran at step 33, the rest is
# called by 34-run.sh), one stage per argument (carry .whl),
# in the order of what they decide (each stage builds what it needs; a warm machine keeps builds):
#   bash reports/examples/gpu-speed-h200/33-run.sh int8 verify ncu lanes normq scale rocmfp2
# int8: this tree's DS4KIT_GPU_INT8=auto (shared until step 33; all since) against all, interleaved (the chain order now with
# 98a5ce1's scale loads and 554bc6e's constant-offset batches: does all still lose decode?).
# verify: the kernels of a verify of 8 distinct tokens beside a decoded token's, without early
# launches (chained decode 1.74 ms, verify of 8 6.8-7.3 ms at step 32: the widths' cost is DSpark's).
# ncu: Nsight Compute on all's int8 GEMVs of the first decoded token (q_b, wo_b, the head:
# why 21 us where the float kernel takes 15 for the same rows, step 32), beside the float
# kernel of q_b; stalls by instruction for the one-column 4-row kernel (scripts/ncu-stalls).
# lanes: under DS4KIT_GPU_INT8=all, 33-chain-lanes2.diff (two lanes a chain, 16 bytes of a block
# a lane by one load, half the shuffles and load instructions a byte; the same order, so one
# hash) built beside this tree (four lanes, 8 bytes): hashes, then decode / verify / prefill.
# scale: 98a5ce1's change to the default path (33-f16-scale.diff: the Q8_0 shared expert's walk
# reads a block's f16 scale by one 16-bit load and the hardware conversion instead of two byte
# loads and the software one) against the code before it by scripts/gpu-diff-ab (two fresh
# builds): one hash per model expected (the conversion is exact), decode / verify / prefill.
# normq: under DS4KIT_GPU_INT8=all, DS4KIT_GPU_NORM_INT8=auto (the norm that feeds a Q8_0 matmul
# writes its int8 columns: 17 quantiser launches a token fewer) against never, one build: one
# hash expected (the same bytes), then decode / verify / prefill interleaved.
# rocmfp2: the issue's file with ROCMFP2 (type 107) experts, ours only (8 writer processes now
# that the generator draws codes in chunks; step 32's 2 workers ran past 540 s).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
d=reports/examples/gpu-speed-h200
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/33-device.txt" 2>&1
# hashes FILE "LABEL VAR=value ..." ...: scripts/logits-hash of the speed file (60 tokens, under
# `all`) with each setting's variables, a line per label, into FILE (one hash expected throughout).
hashes() {
  local file=$1 setting label; shift
  for setting in "$@"; do
    label=${setting%% *}
    echo "$label: $(env DS4KIT_GPU_INT8=all ${setting#* } "$PY" scripts/logits-hash "$model" --backend cuda --tokens 60 2>&1 | tail -1)"
  done | tee "$file"
}
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    scale) PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} bash scripts/gpu-diff-ab "$d/33-f16-scale.diff" "$OUT/scale" hash ab
           cp "$OUT/scale/hash.txt" "$OUT/33-scale-hash.txt"; cp "$OUT/scale/ab.txt" "$OUT/33-scale-ab.txt" ;;
    normq) source scripts/gpu-build "$OUT/build.log" || exit 3  # one build: the switch DS4KIT_GPU_NORM_INT8
           model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
           hashes "$OUT/33-normq-hash.txt" "auto DS4KIT_GPU_NORM_INT8=auto" "never DS4KIT_GPU_NORM_INT8=never"
           DS4KIT_GPU_INT8=all PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} bash scripts/gpu-env-ab "$OUT/normq" \
             "DS4KIT_GPU_NORM_INT8=auto" "DS4KIT_GPU_NORM_INT8=never" >/dev/null 2>&1
           grep -v counters "$OUT/normq/env-ab.txt" | tee "$OUT/33-normq-ab.txt" ;;
    int8) source scripts/gpu-build "$OUT/build.log" || exit 3
          PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} bash scripts/gpu-env-ab "$OUT/int8" \
            "DS4KIT_GPU_INT8=auto" "DS4KIT_GPU_INT8=all" >/dev/null 2>&1
          grep -v counters "$OUT/int8/env-ab.txt" | tee "$OUT/33-int8-ab.txt" ;;
    lanes) source scripts/gpu-build "$OUT/build.log" || exit 3  # this tree (four lanes), then the variant beside it
           rm -rf build/v-tree && mkdir -p build/v-tree && cp -r ds4kit build/v-tree/
           patch -p1 -s <"$d/33-chain-lanes2.diff" || exit 4
           rm -rf build/diff-lanes2
           DS4KIT_BUILD_DIR=build/diff-lanes2 source scripts/gpu-build "$OUT/build-lanes2.log"; built=$?
           [ $built -eq 0 ] && rm -rf build/v-lanes2 && mkdir -p build/v-lanes2 && cp -r ds4kit build/v-lanes2/
           patch -R -p1 -s <"$d/33-chain-lanes2.diff"; cp build/v-tree/ds4kit/_engine*.so ds4kit/
           [ $built -eq 0 ] || exit 3
           model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
           hashes "$OUT/33-lanes-hash.txt" "tree PYTHONPATH=$PWD/build/v-tree:$PYTHONPATH" \
             "lanes2 PYTHONPATH=$PWD/build/v-lanes2:$PYTHONPATH"
           DS4KIT_GPU_INT8=all PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} bash scripts/gpu-env-ab "$OUT/lanes" \
             "PYTHONPATH=$PWD/build/v-tree:$PYTHONPATH" "PYTHONPATH=$PWD/build/v-lanes2:$PYTHONPATH" >/dev/null 2>&1
           sed -e "s|PYTHONPATH=$PWD/build/v-\([a-z0-9]*\):[^ ]*|\1|" "$OUT/lanes/env-ab.txt" | grep -v counters | tee "$OUT/33-lanes-ab.txt" ;;
    ncu) source scripts/gpu-build "$OUT/build.log" || exit 3
         model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
         DS4KIT_GPU_INT8=all timeout ${NCU_TIMEOUT:-240} ncu --clock-control none --kernel-name-base demangled \
           -k "regex:ds4_matmul_(int8_)?kernel" --launch-skip ${NCU_SKIP:-40} --launch-count ${NCU_COUNT:-12} \
           --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
           --section Occupancy --section LaunchStats --section InstructionStats \
           "$PY" scripts/gpu-decode-profile "$model" --prompt 8 --tokens 2 --no-verify --no-profile \
           >"$OUT/33-ncu-int8.txt" 2>&1
         grep -E "ds4_matmul|Duration|DRAM Throughput|Executed Instructions  |No Eligible|Achieved Occupancy|Grid Size|Stall" \
           "$OUT/33-ncu-int8.txt" | head -80
         DS4KIT_GPU_INT8=all timeout 200 ncu --clock-control none --kernel-name-base demangled \
           -k "regex:ds4_matmul_int8_kernel<\(int\)1, \(int\)4>" --launch-skip 20 --launch-count 1 \
           --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
           "$PY" scripts/gpu-decode-profile "$model" --prompt 8 --tokens 2 --no-verify --no-profile \
           >"$OUT/33-ncu-src-int8.csv" 2>&1
         "$PY" scripts/ncu-stalls "$OUT/33-ncu-src-int8.csv" >"$OUT/33-ncu-src-int8.txt" 2>&1; head -40 "$OUT/33-ncu-src-int8.txt" ;;
    verify) source scripts/gpu-build "$OUT/build.log" || exit 3
            model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
            DS4KIT_GPU_PDL=never timeout 240 "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --verify-profile 8 \
              --json "$OUT/33-verify-profile.json" >"$OUT/33-verify-profile.txt" 2>&1
            grep -A60 "^verify of" "$OUT/33-verify-profile.txt" | head -70 ;;
    rocmfp2) source scripts/gpu-build "$OUT/build.log" || exit 3
             model=$(SPEED_EXPERTS_TYPE=107 bash scripts/gpu-speed-model /tmp/synth-107) || exit 4
             timeout 150 "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --no-profile >"$OUT/33-rocmfp2.txt" 2>&1
             grep -hE "^cuda|decode median|verify ms|prefill" "$OUT/33-rocmfp2.txt" ;;
    *) echo "33-run.sh: unknown stage $stage (int8, verify, ncu, lanes, normq, scale, rocmfp2)" >&2; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
