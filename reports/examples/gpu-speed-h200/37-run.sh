#!/usr/bin/env bash
# Step 37 on the lent GPU, one stage per argument (carry .whl and .llama):
#   bash reports/examples/gpu-speed-h200/37-run.sh ranges    # one call (about 300 s)
#   bash reports/examples/gpu-speed-h200/37-run.sh step      # one call (about 220 s)
#   bash reports/examples/gpu-speed-h200/37-run.sh direct    # one call (about 400 s; not yet run)
#   bash reports/examples/gpu-speed-h200/37-run.sh shape     # one call (about 450 s; not yet run)
# ranges: the attention's scores as one fma chain a range of 128 values of d, the ranges added in
# order, with the small head groups taking a range a thread (37-ranges.diff) against step 36's one
# chain over all of d (which made decode after 2048 tokens 6% slower: 36-attn-ab.txt), built side
# by side by scripts/gpu-diff-ab, two rounds of a 2048-token prefill then decode and verify; the
# order changes, so the hash is not compared. Beside them, the variant after+37-no-shexp: the
# shared expert on its own lane walk again (37-no-shexp.diff takes back the shared expert on the
# Q8_0 matmuls' kernels, which also changes bits). Then test_gpu_int8.py and test_gpu_forward.py's
# bounds and kernel choices on the new build.
# step: the two together (37-step.diff, the engine since e0b9497) against step 36's code in one
# round (the short form of `ranges` for a session with little device time left), then the same
# tests.
# direct: the head groups of 8 or fewer reading key rows straight from memory (37-direct.diff;
# the staged slabs cost decode's groups 40-80 us a launch, 37-profile-after.txt) against the
# staged code: one logits hash a model expected (the same chains), then decode, verify and
# prefill in two rounds, a decode profile with DS4KIT_GPU_PDL=never (each kernel's own time),
# and the tests of `step`.
# shape: a full-width file of a shape the kernels were not tuned on (SHAPE_LAYERS, default 4;
# SHAPE_EXPERTS, default Q4_K: llama.cpp loads it, and our Q4_K experts have no int8 walk and no
# tensor-core GEMM, so prefill takes the float walks), ours at the default prefill block (1024 on
# a GPU) on 512- and 2048-token prefills and chained decode, then llama-bench on the same file
# (ubatch 512 with tg128, ubatch 2048) in the same call.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/37-device.txt" 2>&1
d=reports/examples/gpu-speed-h200
# diff_then_tests NAME STAGES REPS LIMIT: scripts/gpu-diff-ab of 37-NAME.diff (its STAGES, REPS
# rounds of a 2048-token prefill, decode and verify; VARIANTS passes through) into 37-NAME-*.txt,
# then, on the tree's build, test_gpu_int8.py and test_gpu_forward.py's bounds and kernel choices
# (37-tests-*.txt for step, the record's names; 37-NAME-tests-*.txt otherwise).
diff_then_tests() {
  local name=$1 stages=$2 reps=$3 limit=$4 tests=37-$1-tests
  [ "$name" = step ] && tests=37-tests
  PROFILE_ARGS="--prompt 2048 --tokens 16" REPS=${REPS:-$reps} timeout "$limit" \
    bash scripts/gpu-diff-ab "$d/37-$name.diff" "$OUT/$name" $stages >"$OUT/$name.log" 2>&1
  [ -f "$OUT/$name/hash.txt" ] && cp "$OUT/$name/hash.txt" "$OUT/37-$name-hash.txt" && cat "$OUT/37-$name-hash.txt"
  cp "$OUT/$name/ab.txt" "$OUT/37-$name-ab.txt"; grep -v counters "$OUT/37-$name-ab.txt"; tail -2 "$OUT/$name.log"
  export PYTHONPATH="/tmp/ds4kit-site:$PWD" PY=python3
  timeout 100 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_int8.py >"$OUT/$tests-int8.txt" 2>&1
  tail -1 "$OUT/$tests-int8.txt"
  timeout 60 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_forward.py -k "wide_calls or match_cpu or verify_and_prefill" \
    >"$OUT/$tests-forward.txt" 2>&1
  tail -1 "$OUT/$tests-forward.txt"
}
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    ranges) VARIANTS=$d/37-no-shexp.diff diff_then_tests ranges ab 2 450 ;;
    step) diff_then_tests step ab 1 330 ;;
    direct) diff_then_tests direct "hash ab" 2 420
            DS4KIT_GPU_PDL=never timeout 90 python3 scripts/gpu-decode-profile /dev/shm/fullwidth-8L-Q2_K.gguf --prompt 2048 \
              --tokens 16 --profile-tokens 4 --no-verify >"$OUT/37-direct-profile-nopdl.txt" 2>&1
            grep -E "attention" "$OUT/37-direct-profile-nopdl.txt" | head -6 ;;
    shape) source scripts/gpu-build "$OUT/build.log" || exit 3
           model=$(SPEED_LAYERS=${SHAPE_LAYERS:-4} SPEED_EXPERTS_TYPE=${SHAPE_EXPERTS:-Q4_K} \
                   bash scripts/gpu-speed-model /tmp/synth) || exit 4
           for p in 512 2048; do
             timeout 150 "$PY" scripts/gpu-decode-profile "$model" --prompt $p --tokens 32 --no-profile \
               >"$OUT/37-shape-ours-$p.txt" 2>&1
             echo "prompt $p:"; grep -hE "^prefill|decode median|verify ms" "$OUT/37-shape-ours-$p.txt"
           done
           timeout 240 bash scripts/llama-cuda-bench "$model" "$OUT/llama" | tee "$OUT/37-shape-llama.txt"
           cp "$OUT"/llama/*.json "$OUT/" 2>/dev/null ;;
    *) echo "37-run.sh: unknown stage $stage (ranges, step, direct, shape)" >&2; exit 2 ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
