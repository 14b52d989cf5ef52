#!/usr/bin/env python3
"""Informational benchmark of the quant dot kernels: GB/s of weight bytes streamed
by _engine.matvec (one thread) for every type with kernels, scalar vs SIMD.

Each dispatch level runs in its own process (DS4KIT_CPU_FEATURES is read once).
Usage: PYTHONPATH=. python scripts/bench_quant_dot.py [--rows 1024] [--cols 4096]
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def measure(rows: int, cols: int, min_seconds: float) -> dict:
    import numpy as np

    from ds4kit import _engine

    rng = np.random.default_rng(0)
    x = rng.standard_normal(cols).astype(np.float32)
    out = {"dispatch": _engine.quant_dispatch(), "types": {}}
    for t in _engine.qtypes():
        if not t["kernels"]:
            continue
        row_bytes = cols // t["block_size"] * t["type_size"]
        raw = rng.integers(0, 256, size=rows * row_bytes, dtype=np.uint8)
        if t["id"] in (0, 1, 30):  # keep float rows finite (nan/inf would not change speed, but be tidy)
            raw = rng.standard_normal(rows * cols).astype(np.float32)
            raw = {0: raw, 1: raw.astype(np.float16), 30: (raw.view(np.uint32) >> 16).astype(np.uint16)}[t["id"]]
            raw = raw.view(np.uint8)
        _engine.matvec(t["id"], raw, x, rows)  # warm up
        reps, start = 0, time.perf_counter()
        while True:
            _engine.matvec(t["id"], raw, x, rows)
            reps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        out["types"][t["name"]] = raw.nbytes * reps / elapsed / 1e9
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--cols", type=int, default=4096, help="elements per row (multiple of 256)")
    ap.add_argument("--seconds", type=float, default=0.3, help="minimum timing per type and level")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(measure(args.rows, args.cols, args.seconds)))
        return

    runs = {}
    for level in ("scalar", None):
        env = {k: v for k, v in os.environ.items() if k != "DS4KIT_CPU_FEATURES"}
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        if level:
            env["DS4KIT_CPU_FEATURES"] = level
        cmd = [sys.executable, __file__, "--worker", "--rows", str(args.rows), "--cols", str(args.cols),
               "--seconds", str(args.seconds)]
        res = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
        runs[res["dispatch"] if level is None else "scalar"] = res["types"]
    simd = next((k for k in runs if k != "scalar"), None)
    print(f"matvec {args.rows} x {args.cols}, one thread; GB/s of weight bytes")
    header = f"{'type':<20}{'scalar':>10}" + (f"{simd:>10}{'speedup':>10}" if simd else "")
    print(header)
    for name, gbs in runs["scalar"].items():
        line = f"{name:<20}{gbs:>10.2f}"
        if simd:
            line += f"{runs[simd][name]:>10.2f}{runs[simd][name] / gbs:>9.1f}x"
        print(line)
    if not simd:
        print("(no SIMD level on this CPU: only the scalar kernels ran)")


if __name__ == "__main__":
    main()
