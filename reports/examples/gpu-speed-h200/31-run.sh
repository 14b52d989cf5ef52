#!/usr/bin/env bash
# Step 31 on the lent GPU, one stage per argument (carry .whl; `side` of 30-run.sh also .llama):
#   bash reports/examples/gpu-speed-h200/31-run.sh block
#   bash reports/examples/gpu-speed-h200/31-run.sh warm pp
# block: 256-token prefill blocks (31-prefill-block.diff, fb81916) against the code before them
# by scripts/gpu-diff-ab: hashes (prefill, verify, decode: one per model), then decode / verify
# / a 512-token prefill interleaved over REPS (2) rounds.
# warm: this tree built once; the L2 warmer (gpu_warm.h, Backend::prefetch) under its settings:
# logits hashes of the speed file and a medium Q8_0 model with it off, l2 and last (a prefetch
# changes no bit: one hash per model), then decode / verify / prefill by scripts/gpu-env-ab,
# the settings interleaved over REPS (2) rounds: off; l2 with 24 MB a hint and 32 blocks; last;
# l2 with 40 MB; l2 with 132 blocks; then tests/gpu/test_gpu_warm.py (the same bits, decode and
# verify, graphs replayed; the settings' errors).
# pp: a 512-token prefill from an empty context, its kernels per block of 32 (the prefill gap to
# llama.cpp's pp512, 2000 against 3500 tok/s, never profiled before).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
d=reports/examples/gpu-speed-h200
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/31-device.txt" 2>&1
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    warm)
      source scripts/gpu-build "$OUT/build.log" || exit 3
      model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
      small=/tmp/warm-small.gguf
      "$PY" -m ds4kit model synth "$small" --preset medium --types attn=Q8_0 --types output=Q8_0 --no-progress \
        --out /tmp/small-synth >/dev/null 2>&1 || exit 4
      for m in "$small" "$model"; do
        tok=200; [ "$m" = "$model" ] && tok=60
        for w in off l2 last; do
          echo "$w $(basename "$m"): $(DS4KIT_GPU_WARM=$w "$PY" scripts/logits-hash "$m" --backend cuda --tokens $tok 2>&1 | tail -1)"
        done
      done | tee "$OUT/31-warm-hash.txt"
      REPS=${REPS:-2} PY=$PY bash scripts/gpu-env-ab "$OUT/warm" "DS4KIT_GPU_WARM=off" "DS4KIT_GPU_WARM=l2" \
        "DS4KIT_GPU_WARM=last" "DS4KIT_GPU_WARM=l2 DS4KIT_GPU_WARM_MB=40" "DS4KIT_GPU_WARM=l2 DS4KIT_GPU_WARM_BLOCKS=132" \
        >/dev/null 2>&1
      grep -v counters "$OUT/warm/env-ab.txt" | tee "$OUT/31-warm-ab.txt"
      DS4KIT_GPU_REQUIRED=1 timeout 200 "$PY" -m pytest -q tests/gpu/test_gpu_warm.py >"$OUT/31-warm-tests.txt" 2>&1
      tail -3 "$OUT/31-warm-tests.txt" ;;
    block) PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} bash scripts/gpu-diff-ab "$d/31-prefill-block.diff" "$OUT/block" hash ab
           cp "$OUT/block/hash.txt" "$OUT/31-block-hash.txt"; cp "$OUT/block/ab.txt" "$OUT/31-block-ab.txt" ;;
    pp) source scripts/gpu-build "$OUT/build.log" || exit 3
        model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
        timeout 150 "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --tokens 16 --no-verify --no-profile \
          --prefill-profile 512 >"$OUT/31-pp512-profile.txt" 2>&1
        grep -hE "^prefill|^cuda" "$OUT/31-pp512-profile.txt"; sed -n '/prefill kernel/,+24p' "$OUT/31-pp512-profile.txt" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
