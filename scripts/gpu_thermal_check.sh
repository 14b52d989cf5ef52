#!/usr/bin/env bash
# Real-hardware check of `ds4kit thermal watch` on an NVIDIA GPU (written for the lent H200).
#
#   OUT=/some/dir bash scripts/gpu_thermal_check.sh        # from the repository root
#
# Needs python3 with nvidia-ml-py, psutil, rich, matplotlib, click, torch (or cupy), and
# jsonschema + referencing for the report core: if they are missing they are installed from
# wheels in ./.whl (pip --no-index). Writes under $OUT:
#   thermal-sleep5/   `thermal watch -- sleep 5` (the issue's "done when" check)
#   thermal-h200/     `thermal watch` around ~60 s of bf16 matmul load (report, JSONL, CSV, PNG)
#   sensors.txt, nvidia-smi.txt, gpu_thermal_summary.txt (what the closing note needs)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to a folder for the results}
LOAD_SECONDS=${LOAD_SECONDS:-60}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.}  # keep a carried site dir (e.g. /tmp/site:.)

if ! python3 -c 'import jsonschema, referencing' 2>/dev/null; then
    if [ -d .whl ]; then
        python3 -m pip install -q --no-index --find-links .whl jsonschema referencing || true
    fi
    python3 -c 'import jsonschema, referencing' || { echo "jsonschema/referencing missing: carry their wheels in .whl/" >&2; exit 2; }
fi

nvidia-smi --query-gpu=name,driver_version,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.max.sm,clocks_event_reasons.active \
    --format=csv > "$OUT/nvidia-smi.txt" 2>&1 || nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
python3 -m ds4kit thermal sensors > "$OUT/sensors.txt" 2>&1
cat "$OUT/sensors.txt"

python3 -m ds4kit thermal watch --quiet --out "$OUT/thermal-sleep5" -- sleep 5
echo "sleep 5 under watch: exit $?"

# ~LOAD_SECONDS of dense bf16 matmuls: enough to heat the GPU and move clocks and power.
LOAD='
import sys, time
secs = float(sys.argv[1])
try:
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
    sync = torch.cuda.synchronize; mm = lambda: a @ b; lib = "torch"
except Exception as exc:
    import cupy
    a = cupy.random.rand(8192, 8192, dtype=cupy.float32); b = cupy.random.rand(8192, 8192, dtype=cupy.float32)
    sync = cupy.cuda.Device().synchronize; mm = lambda: a @ b; lib = "cupy (torch failed: %s)" % exc
t0 = time.time(); n = 0
while time.time() - t0 < secs:
    for _ in range(20):
        mm()
    sync(); n += 20
dt = time.time() - t0
print("load: %s, %d matmuls of 8192^3 in %.1f s, %.0f TFLOP/s" % (lib, n, dt, n * 2 * 8192**3 / dt / 1e12))
'
python3 -m ds4kit thermal watch --quiet --interval 0.5 --warn-at 85 --abort-at 92 --abort-after 5 --child-log \
    --out "$OUT/thermal-h200" -- python3 -c "$LOAD" "$LOAD_SECONDS"
rc=$?
echo "load under watch: exit $rc"

python3 - "$OUT" <<'PY' | tee "$OUT/gpu_thermal_summary.txt"
import json, sys
from pathlib import Path
from ds4kit.reports import validate_report
out = Path(sys.argv[1])
for name in ("thermal-sleep5", "thermal-h200"):
    rep = json.loads((out / name / "report.json").read_text())
    validate_report(rep, "thermal")
    r = rep["results"]
    print(f"== {name}: status {rep['status']}, exit {r['exit_code']}, {r['end_reason']}")
    print(f"   samples {r['samples']['count']} every {r['samples']['interval_s']} s, span {r['samples']['span_s']} s, "
          f"missed ticks {r['samples']['missed_ticks']}, max gap {r['samples']['max_gap_s']} s")
    for s in r["sensors"]["found"]:
        print(f"   sensor {s['name']}: {s['description']}")
    for u in r["sensors"]["unavailable"]:
        print(f"   unavailable {u['name']}: {u['reason']}")
    for e in r["sensors"]["read_errors"]:
        print(f"   read error {e['sensor']} {e['item']}: {e['message']}")
    print(f"   peak watched temperature: {r['watched_temperature']['peak']}")
    for k, m in r["metrics"].items():
        if k.startswith("gpu0.") or k.startswith("cpu."):
            print(f"   {k:28s} min {m['min']:>9g}  median {m['median']:>9g}  max {m['max']:>9g} {m['unit']}")
    th = r["throttle"]
    print(f"   throttle episodes: {len(th['episodes'])}; clock baselines: {th['clock_baselines']}")
    for e in th["episodes"]:
        print(f"     {e['device']} {e['start_t']}..{e['end_t']} s: " + "; ".join(x["detail"] for x in e["evidence"]))
    reasons = sorted({a for line in (out / name / "samples.jsonl").read_text().splitlines()
                      for t in json.loads(line).get("throttle", {}).values() for a in t.get("active", [])})
    print(f"   NVML clock-event reasons seen in any sample: {reasons}")
log = out / "thermal-h200" / "child.log"
if log.exists():
    print("child.log:", log.read_text().strip()[-400:])
PY
exit $rc
