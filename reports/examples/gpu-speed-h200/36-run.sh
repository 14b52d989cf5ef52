#!/usr/bin/env bash
# Step 36 on the lent GPU, one stage per argument (carry .whl):
#   bash reports/examples/gpu-speed-h200/36-run.sh attn      # one call (about 400 s)
#   bash reports/examples/gpu-speed-h200/36-run.sh plan      # one call (about 300 s)
# attn: the head-group attention (36-attn.diff: a block per group of heads of one token and one
# chunk, each key element widened once for the group; one fma chain a score) against the code
# before it (a block per head and chunk), built side by side by scripts/gpu-diff-ab and timed
# on a 2048-token prefill at block 2048 with decode and verify after it (one round: the budget);
# the order changes, so the logits hash changes by design and is not compared. Then, on the new
# build, test_gpu_int8.py (prefill == verify == decode on the GPU) and test_gpu_forward.py's
# GPU-against-CPU bounds and its kernel-choice check (heads a block, tokens a launch).
# plan: the experts' plan with its pair ids staged a tile at a time (36-plan.diff; it changes no
# bit: one hash a model expected) against the plan before, on a 2048-token prefill at the new
# default block (1024 on a GPU).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
d=reports/examples/gpu-speed-h200
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/36-device.txt" 2>&1
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    attn) PROFILE_ARGS="--prompt 2048 --tokens 16" DS4KIT_PREFILL_BLOCK=2048 REPS=${REPS:-1} timeout 300 \
            bash scripts/gpu-diff-ab "$d/36-attn.diff" "$OUT/attn" ab >"$OUT/attn.log" 2>&1
          cp "$OUT/attn/ab.txt" "$OUT/36-attn-ab.txt"; grep -v counters "$OUT/36-attn-ab.txt"; tail -2 "$OUT/attn.log"
          export PYTHONPATH="/tmp/ds4kit-site:$PWD" PY=python3
          timeout 100 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_int8.py >"$OUT/36-tests-int8.txt" 2>&1
          tail -1 "$OUT/36-tests-int8.txt"
          timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_forward.py -k "wide_calls or match_cpu or verify_and_prefill" \
            >"$OUT/36-tests-forward.txt" 2>&1
          tail -1 "$OUT/36-tests-forward.txt" ;;
    plan) PROFILE_ARGS="--prompt 2048 --tokens 16" REPS=${REPS:-2} timeout 500 \
            bash scripts/gpu-diff-ab "$d/36-plan.diff" "$OUT/plan" hash ab >"$OUT/plan.log" 2>&1
          cp "$OUT/plan/hash.txt" "$OUT/36-plan-hash.txt"; cp "$OUT/plan/ab.txt" "$OUT/36-plan-ab.txt"
          cat "$OUT/36-plan-hash.txt"; grep -v counters "$OUT/36-plan-ab.txt"; tail -2 "$OUT/plan.log" ;;
    *) echo "36-run.sh: unknown stage $stage (attn, plan)" >&2; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
