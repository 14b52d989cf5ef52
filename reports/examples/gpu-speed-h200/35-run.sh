#!/usr/bin/env bash
# Step 35 on the lent GPU (prepared at steps 34 and 35, not yet run: step 35 had no device time),
# one stage per argument, in the order of what they decide (carry .whl; .llama for side2048):
#   bash reports/examples/gpu-speed-h200/35-run.sh kernels      # one call (about 500 s)
#   bash reports/examples/gpu-speed-h200/35-run.sh tests        # one call (about 420 s)
#   bash reports/examples/gpu-speed-h200/35-run.sh pipe block side2048 ncugemm normq lanes
# kernels: step 35's kernel changes (35-kernels.diff: the expert GEMM's scale table and biased
# integer dots, the bias and the fma scale decode in decode's int8 walks, the Q8_0 GEMM's tree on
# every thread, its two cp.async buffers) against the code before them, and the variant 35-attn-bounds.diff on top (the
# attention chunks capped at 85 registers for three blocks an SM; not in the tree): one logits
# hash a model for each build (before and after must agree), then decode, verify and prefill
# interleaved (scripts/gpu-diff-ab).
# pipe: the Q8_0 GEMM's two buffers (DS4KIT_GPU_GEMM_PIPE=auto, the default) against one
# (never) in one build: one hash expected, then prefill of 512 and 2048 tokens interleaved.
# tests: test_gpu_int8.py (prefill == verify == decode on the GPU, the prefill-block check), then
# all of tests/gpu.
# block: DS4KIT_PREFILL_BLOCK (step 34: a session's prefill block, default 256) at 256, 512, 1024
# and 2048 on a 2048-token prefill, interleaved (larger blocks give each routed expert more
# columns a pass of its tensor-core GEMMs; the attention and the plan grow with the block), after
# test_gpu_int8's check that the block changes no bit on the GPU.
# side2048: ours with the block `block` found best (BLOCK, default 1024) beside llama-bench's
# ubatch 2048 in one call (llama.cpp 7981 tok/s on the H100 at step 34).
# ncugemm: Nsight Compute on the expert GEMMs alone (step 34's filter caught attention first):
# speed of light, stalls, and the down GEMM's stalls by instruction.
# normq, lanes: 33-run.sh's stages (the norms' int8 columns alone; two lanes a chain).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
d=reports/examples/gpu-speed-h200
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/35-device.txt" 2>&1
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    kernels) VARIANTS="$d/35-attn-bounds.diff" REPS=${REPS:-2} timeout 570 bash scripts/gpu-diff-ab \
               "$d/35-kernels.diff" "$OUT/kernels" hash ab >"$OUT/kernels.log" 2>&1
             cp "$OUT/kernels/hash.txt" "$OUT/35-kernels-hash.txt"; cp "$OUT/kernels/ab.txt" "$OUT/35-kernels-ab.txt"
             cat "$OUT/35-kernels-hash.txt"; grep -v counters "$OUT/35-kernels-ab.txt" | grep -v "verify ms"; tail -3 "$OUT/kernels.log" ;;
    pipe) source scripts/gpu-build "$OUT/build.log" || exit 3
          model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
          for v in auto never; do
            echo "$v $(DS4KIT_GPU_GEMM_PIPE=$v "$PY" scripts/logits-hash "$model" --backend cuda --tokens 60 2>&1 | tail -1)"
          done | tee "$OUT/35-pipe-hash.txt"
          PROFILE_ARGS="--prompt 2048 --tokens 16" REPS=${REPS:-2} bash scripts/gpu-env-ab "$OUT/pipe" \
            "DS4KIT_GPU_GEMM_PIPE=auto" "DS4KIT_GPU_GEMM_PIPE=never" >/dev/null 2>&1
          grep -v counters "$OUT/pipe/env-ab.txt" | grep -v "verify ms" | tee "$OUT/35-pipe-ab.txt" ;;
    tests) source scripts/gpu-build "$OUT/build.log" || exit 3
           timeout 120 "$PY" -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_int8.py >"$OUT/35-tests-int8.txt" 2>&1
           tail -1 "$OUT/35-tests-int8.txt"
           timeout 400 "$PY" -m pytest -q -p no:cacheprovider tests/gpu >"$OUT/35-tests-gpu.txt" 2>&1
           tail -1 "$OUT/35-tests-gpu.txt" ;;
    block) source scripts/gpu-build "$OUT/build.log" || exit 3
           timeout 200 "$PY" -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_int8.py -k prefill_block \
             >"$OUT/35-block-test.txt" 2>&1; tail -1 "$OUT/35-block-test.txt"
           PROFILE_ARGS="--prompt 2048 --tokens 16" REPS=${REPS:-2} bash scripts/gpu-env-ab "$OUT/block" \
             "DS4KIT_PREFILL_BLOCK=256" "DS4KIT_PREFILL_BLOCK=512" "DS4KIT_PREFILL_BLOCK=1024" \
             "DS4KIT_PREFILL_BLOCK=2048" >/dev/null 2>&1
           grep -v counters "$OUT/block/env-ab.txt" | grep -v "verify ms" | tee "$OUT/35-block-ab.txt" ;;
    side2048) source scripts/gpu-build "$OUT/build.log" || exit 3
              model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
              DS4KIT_PREFILL_BLOCK=${BLOCK:-1024} timeout 200 "$PY" scripts/gpu-decode-profile "$model" --prompt 2048 \
                --tokens 16 --no-profile >"$OUT/35-ours-2048.txt" 2>&1
              grep -hE "^prefill|decode median" "$OUT/35-ours-2048.txt"
              timeout 300 bash scripts/llama-cuda-bench "$model" "$OUT/llama" | tee "$OUT/35-llama.txt" ;;
    ncugemm) source scripts/gpu-build "$OUT/build.log" || exit 3
             model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
             timeout 200 ncu --clock-control none -k "regex:ds4_moe_(gate_up|down)_q2k_gemm_kernel" --launch-skip 2 \
               --launch-count 2 --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
               --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats \
               "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --tokens 2 --no-verify --no-profile \
               >"$OUT/35-ncu-moe-gemm.txt" 2>&1
             grep -E "ds4_|Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Executed Instructions  |No Eligible|Achieved Occupancy" \
               "$OUT/35-ncu-moe-gemm.txt" | head -40
             timeout 200 ncu --clock-control none -k "regex:ds4_moe_down_q2k_gemm_kernel" --launch-skip 2 --launch-count 1 \
               --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
               "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --tokens 2 --no-verify --no-profile \
               >"$OUT/35-ncu-src-down.csv" 2>&1
             "$PY" scripts/ncu-stalls "$OUT/35-ncu-src-down.csv" >"$OUT/35-ncu-src-down.txt" 2>&1
             head -30 "$OUT/35-ncu-src-down.txt" ;;
    normq | lanes) bash "$d/33-run.sh" "$stage" ;;
    *) echo "35-run.sh: unknown stage $stage (kernels, pipe, tests, block, side2048, ncugemm, normq, lanes)" >&2; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
