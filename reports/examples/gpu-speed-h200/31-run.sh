#!/usr/bin/env bash
# Step 31 on the lent GPU, one stage per argument (carry .whl):
#   bash reports/examples/gpu-speed-h200/31-run.sh block pp warm
# block: 256-token prefill blocks (31-prefill-block.diff, fb81916) against the code before them
# by scripts/gpu-diff-ab: hashes (prefill, verify, decode: one per model), then decode / verify
# / a 512-token prefill interleaved over REPS (2) rounds; with the variant 31-moe-cols4.diff on top
# (the routed int8 experts four columns a pass where a call gives them two or more on average:
# a row's Q2_K codes and scales decoded once for four columns).
# pp: a 512-token prefill from an empty context, its kernels per 32 tokens (the prefill gap to
# llama.cpp's pp512, 2000 against 3500 tok/s, never profiled before).
# warm (run on fb81916 with 31-warm.diff, e392b57, in the tree; not kept): the L2 warmer
# (gpu_warm.h, Backend::prefetch) under its settings: logits hashes of the
# speed file with it off, l2 and last (a prefetch changes no bit: one hash), then decode /
# verify / prefill by scripts/gpu-env-ab, the settings interleaved over REPS (2) rounds: off; l2
# with 24 MB a hint and 32 blocks; last; l2 with 40 MB (WARM_MORE=1: also l2 with 132 blocks);
# then tests/gpu/test_gpu_warm.py (the same bits, decode and verify, graphs replayed; the
# settings' errors).
# pp and warm run the block stage's "after" build when it is there, else build this tree.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
d=reports/examples/gpu-speed-h200
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/31-device.txt" 2>&1
# This tree's module: the block stage's kept "after" build, or a build now. Sets PY, PYTHONPATH
# and `model` (the speed file).
this_tree() {
  if [ -d build/v-after/ds4kit ] && [ -d /tmp/ds4kit-site ]; then
    PY=${PYTHON:-python3}
    export PYTHONPATH="$PWD/build/v-after:/tmp/ds4kit-site" PYTHONUNBUFFERED=1
  else
    source scripts/gpu-build "$OUT/build.log" || exit 3
  fi
  model=$(bash scripts/gpu-speed-model /tmp/synth) || exit 4
}
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    block) PROFILE_ARGS="--prompt 512" REPS=${REPS:-2} VARIANTS="$d/31-moe-cols4.diff" \
             bash scripts/gpu-diff-ab "$d/31-prefill-block.diff" "$OUT/block" hash ab
           cp "$OUT/block/hash.txt" "$OUT/31-block-hash.txt"; cp "$OUT/block/ab.txt" "$OUT/31-block-ab.txt" ;;
    pp) this_tree
        timeout 150 "$PY" scripts/gpu-decode-profile "$model" --prompt 512 --tokens 16 --no-verify --no-profile \
          --prefill-profile 512 >"$OUT/31-pp512-profile.txt" 2>&1
        grep -hE "^prefill|^cuda" "$OUT/31-pp512-profile.txt"; sed -n '/prefill kernel/,+20p' "$OUT/31-pp512-profile.txt" ;;
    warm) this_tree
          for w in off l2 last; do
            echo "$w: $(DS4KIT_GPU_WARM=$w timeout 100 "$PY" scripts/logits-hash "$model" --backend cuda --tokens 60 2>&1 | tail -1)"
          done | tee "$OUT/31-warm-hash.txt"
          more=(); [ "${WARM_MORE:-0}" = 1 ] && more=("DS4KIT_GPU_WARM=l2 DS4KIT_GPU_WARM_BLOCKS=132")
          REPS=${REPS:-2} PY=$PY bash scripts/gpu-env-ab "$OUT/warm" "DS4KIT_GPU_WARM=off" "DS4KIT_GPU_WARM=l2" \
            "DS4KIT_GPU_WARM=last" "DS4KIT_GPU_WARM=l2 DS4KIT_GPU_WARM_MB=40" "${more[@]}" >/dev/null 2>&1
          grep -v counters "$OUT/warm/env-ab.txt" | tee "$OUT/31-warm-ab.txt"
          DS4KIT_GPU_REQUIRED=1 timeout 200 "$PY" -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_warm.py \
            >"$OUT/31-warm-tests.txt" 2>&1
          tail -3 "$OUT/31-warm-tests.txt" ;;
    *) echo "31-run.sh: unknown stage $stage (block, pp, warm)" >&2; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
