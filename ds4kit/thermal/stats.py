"""Summaries of a sample series: per-metric min/median/max and time spent above a temperature."""
from __future__ import annotations

import fnmatch
import statistics
from typing import Any

from ds4kit.thermal.sensor_base import metric_kind, metric_unit


def watched_temperature(values: dict[str, float], patterns: tuple[str, ...] = ("*",)) -> tuple[float | None, str | None]:
    """The hottest temperature whose key matches one of the glob patterns, and its key."""
    best: tuple[float | None, str | None] = (None, None)
    for key, v in values.items():
        if not key.endswith("_c") or not any(fnmatch.fnmatchcase(key, p) for p in patterns):
            continue
        if best[0] is None or v > best[0]:
            best = (v, key)
    return best


def metric_stats(samples: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    series: dict[str, list[float]] = {}
    for s in samples:
        for k, v in s.get("values", {}).items():
            series.setdefault(k, []).append(v)
    out = {}
    for k in sorted(series):
        xs = series[k]
        out[k] = {"kind": metric_kind(k), "unit": metric_unit(k), "n": len(xs), "min": min(xs),
                  "median": statistics.median(xs), "max": max(xs)}
    return out


def time_above(samples: list[dict[str, Any]], threshold: float | None, patterns: tuple[str, ...]) -> float | None:
    """Seconds the watched temperature spent at or above threshold (each sample holds until the next)."""
    if threshold is None:
        return None
    total = 0.0
    for a, b in zip(samples, samples[1:]):
        temp, _ = watched_temperature(a.get("values", {}), patterns)
        if temp is not None and temp >= threshold:
            total += b["t"] - a["t"]
    return round(total, 3)


def peak_temperature(samples: list[dict[str, Any]], patterns: tuple[str, ...]) -> dict[str, Any] | None:
    best = None
    for s in samples:
        temp, key = watched_temperature(s.get("values", {}), patterns)
        if temp is not None and (best is None or temp > best["value_c"]):
            best = {"value_c": temp, "metric": key, "t": s["t"]}
    return best
