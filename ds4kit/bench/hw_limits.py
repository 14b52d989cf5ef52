"""Hardware limits measured in the benchmark's own run: memory bandwidth and matmul throughput.

    python -m ds4kit.bench.hw_limits THREADS [ARRAY_MB] [--device cuda|hip|auto]   prints one JSON object

Runs as a child process so the BLAS thread count can be set before numpy loads
(OPENBLAS/OMP/MKL_NUM_THREADS = THREADS), the same count the engines get.

Bandwidth (STREAM-like, best of several passes, arrays far larger than the last-level cache):
    copy  a[:] = b        counts 2 x 8 bytes per element (read b, write a)
    add   a[:] = b + c    counts 3 x 8 bytes per element (read b and c, write a)
Each pass splits the arrays into THREADS slices run on THREADS Python threads (numpy drops
the GIL inside these loops). STREAM's convention is kept: write-allocate traffic is not counted.
Matmul: float32 square matmul (numpy -> BLAS), 2 n^3 FLOPs per product, best of several.
--device: also the GPU's limits (the engine's device_limits: a read and a copy kernel over
arrays of 1 GiB or more, best of 5) and its stated bf16 matrix peak (ds4kit.bench.gpu_peaks);
auto measures the GPU the engine would pick, if any.
"""
from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

BLAS_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _llc_bytes() -> int:
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for idx in os.listdir(base):
            try:
                with open(f"{base}/{idx}/size") as f:
                    s = f.read().strip()
                mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(s[-1], 1)
                best = max(best, int(s.rstrip("KMG")) * mult)
            except (OSError, ValueError):
                continue
    except OSError:
        pass
    return best or 32 * 1024 ** 2


def _parallel(pool: ThreadPoolExecutor, threads: int, n: int, fn) -> float:
    bounds = [(n * i // threads, n * (i + 1) // threads) for i in range(threads)]
    t0 = time.perf_counter()
    list(pool.map(lambda b: fn(*b), bounds))
    return time.perf_counter() - t0


def measure_bandwidth(threads: int, array_bytes: int, passes: int = 5) -> dict[str, Any]:
    import numpy as np

    n = array_bytes // 8
    a = np.zeros(n)
    b = np.full(n, 1.5)
    c = np.full(n, 0.25)  # every page touched before timing
    with ThreadPoolExecutor(max_workers=threads) as pool:
        copy_s = min(_parallel(pool, threads, n, lambda i, j: np.copyto(a[i:j], b[i:j])) for _ in range(passes))
        add_s = min(_parallel(pool, threads, n, lambda i, j: np.add(b[i:j], c[i:j], out=a[i:j])) for _ in range(passes))
    if not np.all(a[:: max(1, n // 1000)] == 1.75):
        raise RuntimeError("bandwidth probe computed a wrong sum")
    copy_bps = 2 * 8 * n / copy_s
    add_bps = 3 * 8 * n / add_s
    return {
        "array_bytes": 8 * n,
        "passes": passes,
        "threads": threads,
        "copy_bytes_per_s": copy_bps,
        "add_bytes_per_s": add_bps,
        "bytes_per_s": max(copy_bps, add_bps),
    }


def measure_matmul(threads: int, n: int = 1024, passes: int = 5) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n), dtype=np.float32)
    y = rng.standard_normal((n, n), dtype=np.float32)
    x @ y  # warm-up: BLAS threads started, buffers allocated
    best = float("inf")
    for _ in range(passes):
        t0 = time.perf_counter()
        x @ y
        best = min(best, time.perf_counter() - t0)
    return {"n": n, "passes": passes, "threads": threads, "dtype": "float32",
            "flop_per_s": 2.0 * n ** 3 / best, "blas": _blas_name()}


def _blas_name() -> str | None:
    try:
        import numpy as np

        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        return f"{blas.get('name')} {blas.get('version')}".strip()
    except Exception:
        return None


def probe(threads: int, array_bytes: int | None = None) -> dict[str, Any]:
    llc = _llc_bytes()
    if array_bytes is None:
        array_bytes = max(4 * llc, 64 * 1024 ** 2)  # STREAM rule: 4x the last-level cache or more
    return {"llc_bytes": llc, "bandwidth": measure_bandwidth(threads, array_bytes),
            "matmul": measure_matmul(threads)}


def device_probe(kind: str) -> dict[str, Any] | None:
    """The GPU's measured bandwidth and stated bf16 peak; None when kind is auto and no GPU is
    usable; {"error": why} when the named GPU could not be measured."""
    from ds4kit import _engine
    from ds4kit.bench.gpu_peaks import bf16_peak

    if kind == "auto":
        usable = [name for name, status in _engine.available_backends() if name in ("cuda", "hip") and status == "ok"]
        if not usable:
            return None
        kind = usable[0]
    try:
        lim = dict(_engine.device_limits(kind))
    except Exception as exc:  # the report says why; the host limits still stand
        return {"kind": kind, "error": f"{type(exc).__name__}: {exc}"}
    peak = bf16_peak(lim["device"], lim["arch"])
    return dict(lim, kind=kind, bytes_per_s=max(lim["read_bytes_per_s"], lim["copy_bytes_per_s"]),
                matrix_flop_per_s=peak["flop_per_s"], matrix_peak_source=peak["source"])


def main(argv: list[str]) -> int:
    args = list(argv[1:])
    device = None
    if "--device" in args:
        i = args.index("--device")
        if i + 1 >= len(args) or args[i + 1] not in ("cuda", "hip", "auto"):
            print("hw_limits: --device takes cuda, hip or auto", file=sys.stderr)
            return 2
        device = args[i + 1]
        del args[i:i + 2]
    if len(args) not in (1, 2):
        print("usage: python -m ds4kit.bench.hw_limits THREADS [ARRAY_MB] [--device cuda|hip|auto]", file=sys.stderr)
        return 2
    threads = int(args[0])
    array_bytes = int(float(args[1]) * 1024 ** 2) if len(args) == 2 else None
    out = probe(threads, array_bytes)
    if device is not None:
        out["device"] = device_probe(device)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
