#!/usr/bin/env bash
# Step 28 on the lent GPU, one stage per argument (each device call runs what still fits).
# Second experiment (kept): 28-run.sh sbuild sbase shash sab profile; then gpu speed.
# S, this tree (rms_norm's row in registers with every load at once; hc_collapse's mix sums
# loaded by the whole block into shared memory and the streams' values loaded before them;
# hc_mix_partial's weights loaded before x), and H, the code before (28-small-kernels.diff taken
# back, build/gpu-h): sbuild, sbase keep them in build/vS, build/vH; shash: logits-hash of both
# on the small model and the speed file (the change claims no bit moves); sab: H and S
# interleaved over REPS rounds.
# Third experiment: 28-run.sh tbuild tbase thash tab seam speed: T, this tree (attention_inputs
# loads its row, weights and position first and computes the RoPE angles before the norm; the
# attention combine loads four chunks' sums at once, before the angles; route keeps each
# logit's score for the chosen weights) against S (28-attn-route.diff taken back, build/gpu-s).
# Not kept: no change in decode (1.817-1.824 ms against 1.814-1.826); seam: its tests with T.
# First experiment (not kept: its diffs 28-bounds.diff, 28-moe-bounds.diff; applied by hand
# before the stages build lonly base hash ab ran): three builds: M, this tree (one-column matrix kernels capped for three blocks an SM: the
# matmuls, sets and the int8 experts); L, the cap on the matmuls and sets only (28-moe-bounds.diff
# taken back); B, the code before (28-bounds.diff taken back). build: M, its package kept in
# build/vM; lonly: L (build/vL); base: B (build/gpu-base, build/vB), then the tree and M's module
# restored; hash: scripts/logits-hash of the builds on a small model and on the speed file (a
# register cap moves no bit); ab: decode, verify and prefill of B, L and M interleaved over REPS
# rounds; gpu: tests/gpu with this tree; profile: the kernel table of a decoded token (with and
# without early launches); speed: the speed file's decode, verify and prefill.
set -u
OUT=${OUT:-/tmp/out}
here=reports/examples/gpu-speed-h200
mkdir -p "$OUT"
source scripts/gpu-build "$OUT/build.log" || exit 3
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >"$OUT/28-device.txt" 2>&1
keep() { rm -rf "$1" && mkdir -p "$1" && cp -r ds4kit "$1/"; }  # a build's package, to run by PYTHONPATH
small=/tmp/small-q8.gguf
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    build) keep $PWD/build/vM ;;
    sbuild) keep $PWD/build/vS ;;
    tbuild) keep $PWD/build/vT ;;
    tbase) patch -s -R -p1 <"$here/28-attn-route.diff" || exit 4
           DS4KIT_BUILD_DIR=build/gpu-s source scripts/gpu-build "$OUT/build-s.log" || exit 3
           keep $PWD/build/vS
           patch -s -p1 <"$here/28-attn-route.diff" || exit 4
           cp $PWD/build/vT/ds4kit/_engine*.so ds4kit/ ;;
    thash) speed_model=$(bash scripts/gpu-speed-model /tmp/synth)
           [ -f "$small" ] || "$PY" -m ds4kit model synth "$small" --preset medium --types attn=Q8_0 --types output=Q8_0 \
             --no-progress --out /tmp/small-synth >/dev/null 2>&1
           { for m in "$small" "$speed_model"; do
               tok=200; [ "$m" = "$speed_model" ] && tok=60
               for v in S T; do
                 echo "$v $(basename "$m"): $(PYTHONPATH=$PWD/build/v$v:$PYTHONPATH "$PY" scripts/logits-hash "$m" --backend cuda --tokens $tok 2>&1 | tail -1)"
               done
             done; } >"$OUT/28-attn-route-hash.txt" 2>&1
           cat "$OUT/28-attn-route-hash.txt" ;;
    tab) rm -rf /tmp/ab
         REPS=${REPS:-3} PY=$PY timeout ${AB_TIMEOUT:-420} bash scripts/gpu-env-ab /tmp/ab "PYTHONPATH=$PWD/build/vS:$PYTHONPATH" \
           "PYTHONPATH=$PWD/build/vT:$PYTHONPATH" >/dev/null 2>&1
         { sed "s|$PYTHONPATH|...|g" /tmp/ab/env-ab.txt; for f in /tmp/ab/env-ab-*.txt; do echo "==> $(basename "$f")"; cat "$f"; done; } \
           >"$OUT/28-attn-route-ab.txt"
         grep -E "==|round" "$OUT/28-attn-route-ab.txt" | sed 's/prefill.*decode_greedy)/chained/' | grep -v counters | head -20 ;;
    seam) DS4KIT_GPU_REPORT_DIR=/tmp/seam timeout 300 "$PY" -m pytest -q tests/gpu/test_gpu_seam.py \
            "tests/gpu/test_gpu_forward.py::test_gpu_fusions_change_no_bit" >"$OUT/28-tests-seam.txt" 2>&1
          tail -5 "$OUT/28-tests-seam.txt" ;;
    sbase) patch -s -R -p1 <"$here/28-small-kernels.diff" || exit 4
           DS4KIT_BUILD_DIR=build/gpu-h source scripts/gpu-build "$OUT/build-h.log" || exit 3
           keep $PWD/build/vH
           patch -s -p1 <"$here/28-small-kernels.diff" || exit 4
           cp $PWD/build/vS/ds4kit/_engine*.so ds4kit/ ;;
    shash) [ -f "$small" ] || "$PY" -m ds4kit model synth "$small" --preset medium --types attn=Q8_0 --types output=Q8_0 \
             --no-progress --out /tmp/small-synth >/dev/null 2>&1
           speed_model=$(bash scripts/gpu-speed-model /tmp/synth)
           { for m in "$small" "$speed_model"; do
               tok=200; [ "$m" = "$speed_model" ] && tok=60
               for v in H S; do
                 echo "$v $(basename "$m"): $(PYTHONPATH=$PWD/build/v$v:$PYTHONPATH "$PY" scripts/logits-hash "$m" --backend cuda --tokens $tok 2>&1 | tail -1)"
               done
             done; } >"$OUT/28-small-kernels-hash.txt" 2>&1
           cat "$OUT/28-small-kernels-hash.txt" ;;
    sab) rm -rf /tmp/ab
         REPS=${REPS:-3} PY=$PY timeout ${AB_TIMEOUT:-420} bash scripts/gpu-env-ab /tmp/ab "PYTHONPATH=$PWD/build/vH:$PYTHONPATH" \
           "PYTHONPATH=$PWD/build/vS:$PYTHONPATH" >/dev/null 2>&1
         { sed "s|$PYTHONPATH|...|g" /tmp/ab/env-ab.txt; for f in /tmp/ab/env-ab-*.txt; do echo "==> $(basename "$f")"; cat "$f"; done; } \
           >"$OUT/28-small-kernels-ab.txt"
         grep -E "==|round" "$OUT/28-small-kernels-ab.txt" | sed 's/prefill.*decode_greedy)/chained/' | head -20 ;;
    lonly) patch -s -R -p1 <"$here/28-moe-bounds.diff" || exit 4
           source scripts/gpu-build "$OUT/build-l.log" || exit 3
           keep $PWD/build/vL
           patch -s -p1 <"$here/28-moe-bounds.diff" || exit 4
           cp $PWD/build/vM/ds4kit/_engine*.so ds4kit/ ;;
    base) patch -s -R -p1 <"$here/28-bounds.diff" || exit 4
          DS4KIT_BUILD_DIR=build/gpu-base source scripts/gpu-build "$OUT/build-base.log" || exit 3
          keep $PWD/build/vB
          patch -s -p1 <"$here/28-bounds.diff" || exit 4
          cp $PWD/build/vM/ds4kit/_engine*.so ds4kit/ ;;
    hash) [ -f "$small" ] || "$PY" -m ds4kit model synth "$small" --preset medium --types attn=Q8_0 --types output=Q8_0 \
            --no-progress --out /tmp/small-synth >/dev/null 2>&1
          speed_model=$(bash scripts/gpu-speed-model /tmp/synth)
          { for m in "$small" "$speed_model"; do
              tok=200; [ "$m" = "$speed_model" ] && tok=60
              for v in B L M; do
                echo "$v $(basename "$m"): $(PYTHONPATH=$PWD/build/v$v:$PYTHONPATH "$PY" scripts/logits-hash "$m" --backend cuda --tokens $tok 2>&1 | tail -1)"
              done
            done; } >"$OUT/28-hash.txt" 2>&1
          cat "$OUT/28-hash.txt" ;;
    ab) rm -rf /tmp/ab
        REPS=${REPS:-2} PY=$PY timeout ${AB_TIMEOUT:-420} bash scripts/gpu-env-ab /tmp/ab "PYTHONPATH=$PWD/build/vB:$PYTHONPATH" \
          "PYTHONPATH=$PWD/build/vL:$PYTHONPATH" "PYTHONPATH=$PWD/build/vM:$PYTHONPATH" >/dev/null 2>&1
        { sed "s|$PYTHONPATH|...|g" /tmp/ab/env-ab.txt; for f in /tmp/ab/env-ab-*.txt; do echo "==> $(basename "$f")"; cat "$f"; done; } \
          >"$OUT/28-bounds-ab.txt"
        grep -E "==|round" "$OUT/28-bounds-ab.txt" | head -30 ;;
    profile) model=$(bash scripts/gpu-speed-model /tmp/synth)
             DS4KIT_GPU_PDL=never timeout 200 "$PY" scripts/gpu-decode-profile "$model" --no-verify \
               >"$OUT/28-profile-nopdl.txt" 2>&1
             grep -vi warn "$OUT/28-profile-nopdl.txt" | head -50 ;;
    speed) timeout 200 "$PY" scripts/gpu-decode-profile "$(bash scripts/gpu-speed-model /tmp/synth)" --no-profile \
             >"$OUT/28-speed.txt" 2>&1; cat "$OUT/28-speed.txt" ;;
    gpu) DS4KIT_GPU_REPORT_DIR=/tmp/gpurep timeout ${GPU_TIMEOUT:-400} "$PY" -m pytest -q tests/gpu ${PYTEST_ARGS:-} \
            >"$OUT/28-tests.txt" 2>&1; tail -15 "$OUT/28-tests.txt" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
