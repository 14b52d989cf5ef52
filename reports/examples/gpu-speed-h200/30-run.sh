#!/usr/bin/env bash
# Step 30 on the lent GPU, one stage per argument (carry .whl; `side` also .llama):
#   bash reports/examples/gpu-speed-h200/30-run.sh lanes
#   bash reports/examples/gpu-speed-h200/30-run.sh floor side
# lanes: the tree then carried 30-expert-lanes.diff (the routed Q2_K gate_up's next quarter
# fetched before this one's products; the SwiGLUs one a lane after an xor-butterfly tree with
# the shuffle tree's bits); scripts/gpu-diff-ab built it against the code before it, with two
# variants on top: 30-down8.diff (the routed down in groups of 8 rows) and 29-prefetch.diff
# (step 29's L2 prefetch of the matmuls' row blocks); hashes, then decode / verify / prefill
# interleaved over REPS (2) rounds. (Run on aae3b80 plus the diff; not kept.)
# short: side's decode half only (ours without the kernel table, llama.cpp pp512/tg128 at
# ubatch 512), for a call with little device time left.
# floor: scripts/launch-floor.cu, what a dependent launch costs when its kernel does nothing.
# side: this tree against llama.cpp's CUDA build on the file in one call: ours profiled
# (kernel table, per layer, the 43-layer extrapolation) and a 512-token prefill with its kernels
# per block of 32 (--prefill-profile), llama-bench
# (tg 128, pp 512 at ubatch 512 and 2048); then the same file with ROCMFP2 (type 107) experts,
# ours only (llama.cpp cannot read it).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
d=reports/examples/gpu-speed-h200
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/30-device.txt" 2>&1
# ours_then_llama FULL: this tree built, the file written, ours timed (FULL=1: with the
# kernel table, per layer and the 43-layer extrapolation; else decode and verify only), then
# llama.cpp on the same file by scripts/llama-cuda-bench (pp512/tg128 at ubatch 512; FULL=1: and
# pp2048 at ubatch 2048). Sets `model`.
ours_then_llama() {
  source scripts/gpu-build "$OUT/build.log" || exit 3
  model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
  local table=--no-profile
  [ "$1" = 1 ] && table=
  timeout 150 "$PY" scripts/gpu-decode-profile "$model" $table >"$OUT/30-ours.txt" 2>&1
  UB2048=$1 timeout 200 bash scripts/llama-cuda-bench "$model" /tmp/llama >"$OUT/30-llama.txt" 2>&1
  cp /tmp/llama/llama-bench-ub512.json "$OUT/30-llama-bench-ub512.json" 2>/dev/null
  grep -hE "^cuda|decode median|verify ms|extrapolated" "$OUT/30-ours.txt"
  cat "$OUT/30-llama.txt"
}
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    lanes) REPS=${REPS:-2} VARIANTS="$d/30-down8.diff $d/29-prefetch.diff" \
             bash scripts/gpu-diff-ab "$d/30-expert-lanes.diff" "$OUT/lanes" ${STAGES:-hash ab}
           cp "$OUT/lanes/hash.txt" "$OUT/30-lanes-hash.txt"; cp "$OUT/lanes/ab.txt" "$OUT/30-lanes-ab.txt" ;;
    floor) nvcc -std=c++17 -O3 -arch=sm_90 -o /tmp/launch-floor scripts/launch-floor.cu && /tmp/launch-floor \
             | tee "$OUT/30-launch-floor.txt" ;;
    short) ours_then_llama 0 ;;
    side) ours_then_llama 1
          timeout 120 "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --tokens 16 --no-verify --no-profile \
            --prefill-profile 512 >"$OUT/30-ours-pp512.txt" 2>&1
          grep -hE "^prefill" "$OUT/30-ours-pp512.txt"
          model=$(SPEED_EXPERTS_TYPE=107 bash scripts/gpu-speed-model /tmp/synth-107) || exit 4
          timeout 100 "$PY" scripts/gpu-decode-profile "$model" --no-profile >"$OUT/30-ours-rocmfp2.txt" 2>&1
          grep -hE "decode median|verify ms|^cuda" "$OUT/30-ours-rocmfp2.txt" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
