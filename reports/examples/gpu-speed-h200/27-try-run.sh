#!/usr/bin/env bash
# Step 27, second experiment (one device call): P, this tree (Q8_0's block walk from per-row code
# and scale pointers with 32-bit block offsets, 27-q8ptr.diff), and H, the tree without it; each
# also with the temporary DS4KIT_GPU_ONE_COL_TRY=r2 (one-column calls of 4096-8191 rows, wo_b,
# through the 2-column 2-row kernel). hash: logits-hash of H, P and P with r2; ab: the four
# settings interleaved over REPS rounds.
# After the run: P was not kept (27-q8ptr.diff is its change), and DS4KIT_GPU_ONE_COL_TRY, a
# switch of that build only, is gone: matmul_shape now takes r2's shape by default.
set -u
OUT=${OUT:-/tmp/out}
here=reports/examples/gpu-speed-h200
mkdir -p "$OUT"
keep() { rm -rf "$1" && mkdir -p "$1" && cp -r ds4kit "$1/"; }
source scripts/gpu-build "$OUT/build.log" || exit 3
keep $PWD/build/vP
patch -s -R -p1 <"$here/27-q8ptr.diff" || exit 4
DS4KIT_BUILD_DIR=build/gpu-h source scripts/gpu-build "$OUT/build-h.log" || exit 3
keep $PWD/build/vH
patch -s -p1 <"$here/27-q8ptr.diff" || exit 4
cp $PWD/build/vP/ds4kit/_engine*.so ds4kit/
m=$(bash scripts/gpu-speed-model /tmp/synth)
small=/tmp/small-q8.gguf
[ -f "$small" ] || "$PY" -m ds4kit model synth "$small" --preset medium --types attn=Q8_0 --types output=Q8_0 --no-progress --out /tmp/small-synth >/dev/null 2>&1
{ for f in "$small" "$m"; do
    for v in H P; do echo "$v $(basename $f): $(PYTHONPATH=$PWD/build/v$v:$PYTHONPATH $PY scripts/logits-hash $f --backend cuda --tokens 60 | tail -1)"; done
    echo "P r2 $(basename $f): $(DS4KIT_GPU_ONE_COL_TRY=r2 PYTHONPATH=$PWD/build/vP:$PYTHONPATH $PY scripts/logits-hash $f --backend cuda --tokens 60 | tail -1)"
  done; } > "$OUT/27-try-hash.txt" 2>&1
cat "$OUT/27-try-hash.txt"
rm -rf /tmp/ab
REPS=${REPS:-2} PY=$PY timeout 300 bash scripts/gpu-env-ab /tmp/ab "PYTHONPATH=$PWD/build/vH:$PYTHONPATH" \
  "PYTHONPATH=$PWD/build/vH:$PYTHONPATH DS4KIT_GPU_ONE_COL_TRY=r2" "PYTHONPATH=$PWD/build/vP:$PYTHONPATH" \
  "PYTHONPATH=$PWD/build/vP:$PYTHONPATH DS4KIT_GPU_ONE_COL_TRY=r2" >/dev/null 2>&1
{ sed "s|$PYTHONPATH|...|g" /tmp/ab/env-ab.txt; for f in /tmp/ab/env-ab-*.txt; do echo "==> $(basename "$f")"; cat "$f"; done; } > "$OUT/27-try-ab.txt"
grep -E "==|chained|verify ms" "$OUT/27-try-ab.txt" | head -30
