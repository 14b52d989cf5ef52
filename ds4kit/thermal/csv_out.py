"""Samples as a wide CSV: one row per sample, one column per metric (blank where a sensor had no value)."""
from __future__ import annotations

import csv
import io
from typing import Any


def samples_csv(samples: list[dict[str, Any]]) -> str:
    keys = sorted({k for s in samples for k in s.get("values", {})})
    throttle_sensors = sorted({n for s in samples for n in s.get("throttle", {})})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["i", "t", "time", "phase", *keys, *[f"{n}.throttle" for n in throttle_sensors], "events"])
    for s in samples:
        vals = s.get("values", {})
        thr = s.get("throttle", {})
        w.writerow([s["i"], s["t"], s["time"], s["phase"], *[vals.get(k, "") for k in keys],
                    *["|".join(thr[n].get("active", [])) if n in thr else "" for n in throttle_sensors],
                    "; ".join(s.get("events", []))])
    return buf.getvalue()
