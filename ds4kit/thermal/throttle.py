"""Throttle episodes from three kinds of evidence, none trusted alone.

1. NVML clock-event reasons (SwThermalSlowdown, HwThermalSlowdown, SwPowerCap, ...).
2. gpu_metrics throttle bits, but only bits that change during the run: a bit set in
   every sample (the TEMP_HOTSPOT bit on gfx1151 can be stuck on) is listed as ignored.
   On v3 layouts, which carry per-limiter residency counters instead, a counter that
   grows between two samples is the evidence.
3. Clock drops under sustained load, against this run's own loaded clock (its 90th
   percentile): evidence that needs no vendor bit at all.

Overlapping episodes of one device are merged; each keeps the list of evidence it rests on.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ds4kit.thermal.gpu_metrics import INDEP_THROTTLE_BITS
from ds4kit.thermal.sensor_nvml import THROTTLE_REASONS


@dataclass
class ThrottleParams:
    load_threshold_pct: float = 80.0   # a sample counts as loaded at or above this utilisation
    sustained_samples: int = 3         # ... and only inside a run of this many loaded samples
    drop_fraction: float = 0.10        # a clock this far below baseline is a drop
    min_drop_samples: int = 2          # a one-sample dip is noise, not an episode
    baseline_percentile: float = 90.0


def _percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _runs(flags: list[bool]) -> list[tuple[int, int]]:
    """[start, end) index ranges where flags is True."""
    out, start = [], None
    for i, f in enumerate(flags):
        if f and start is None:
            start = i
        elif not f and start is not None:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(flags)))
    return out


def _span(ts: list[float], a: int, b: int) -> tuple[float, float]:
    # An episode lasts from its first active sample to the first inactive one after it.
    return ts[a], ts[b] if b < len(ts) else ts[-1]


def _nvml_episodes(samples: list[dict]) -> list[dict]:
    out = []
    sensors = sorted({n for s in samples for n, v in s.get("throttle", {}).items() if v.get("source") == "nvml"})
    for name in sensors:
        rows = [(s["t"], set(s["throttle"][name].get("active", [])) & THROTTLE_REASONS)
                for s in samples if name in s.get("throttle", {})]
        ts = [t for t, _ in rows]
        for a, b in _runs([bool(r) for _, r in rows]):
            reasons = sorted(set().union(*(r for _, r in rows[a:b])))
            start, end = _span(ts, a, b)
            out.append({"device": f"gpu{name.split(':')[1]}", "source": "nvml", "start_t": start, "end_t": end,
                        "detail": "NVML clock-event reasons: " + ", ".join(reasons)})
    return out


def _bit_name(field: str, bit: int) -> str:
    return INDEP_THROTTLE_BITS.get(bit, f"bit{bit}") if field == "indep" else f"status_bit{bit}"


def _gpu_metrics_episodes(samples: list[dict]) -> tuple[list[dict], list[dict]]:
    out, ignored = [], []
    sensors = sorted({n for s in samples for n, v in s.get("throttle", {}).items() if v.get("source") == "gpu_metrics"})
    for name in sensors:
        device = name.split(":", 1)[1]
        rows = [(s["t"], s["throttle"][name]) for s in samples if name in s.get("throttle", {})]
        ts = [t for t, _ in rows]
        # Prefer the ASIC-independent word; fall back to the ASIC-dependent one.
        field = "indep" if any("indep" in r for _, r in rows) else "status"
        words = [r.get(field) for _, r in rows]
        if any(w is not None for w in words):
            for bit in range(64):
                series = [bool(w >> bit & 1) if w is not None else False for w in words]
                if not any(series):
                    continue
                if all(series):
                    ignored.append({"device": device, "bit": _bit_name(field, bit),
                                    "reason": f"set in all {len(series)} samples (stuck or permanent), so not evidence"})
                    continue
                for a, b in _runs(series):
                    start, end = _span(ts, a, b)
                    out.append({"device": device, "source": "gpu_metrics_bits", "start_t": start, "end_t": end,
                                "detail": f"gpu_metrics {field} throttle bit {_bit_name(field, bit)} set"})
        names = sorted({k for _, r in rows for k in r.get("residency", {})})
        for key in names:
            vals = [r.get("residency", {}).get(key) for _, r in rows]
            grow = [False] + [a is not None and b is not None and b > a for a, b in zip(vals, vals[1:])]
            for a, b in _runs(grow):
                start, end = _span(ts, a, b)
                out.append({"device": device, "source": "gpu_metrics_residency", "start_t": start, "end_t": end,
                            "detail": f"gpu_metrics throttle_residency_{key} grew from {vals[a - 1]} to {vals[b - 1]}"})
    return out, ignored


def _clock_drop_episodes(samples: list[dict], pairs: list[tuple[str, str]], p: ThrottleParams) -> tuple[list[dict], dict]:
    out, baselines = [], {}
    for clock_key, load_key in pairs:
        rows = [(s["t"], s["values"][clock_key], s["values"][load_key]) for s in samples
                if clock_key in s.get("values", {}) and load_key in s.get("values", {})]
        if not rows:
            continue
        loaded = [load >= p.load_threshold_pct for _, _, load in rows]
        sustained = [False] * len(rows)
        for a, b in _runs(loaded):
            if b - a >= p.sustained_samples:
                sustained[a:b] = [True] * (b - a)
        clocks = [c for (_, c, _), ok in zip(rows, sustained) if ok]
        if len(clocks) < max(5, p.sustained_samples):
            baselines[clock_key] = {"baseline_mhz": None, "loaded_samples": len(clocks),
                                    "note": f"fewer than 5 samples under sustained load >= {p.load_threshold_pct:g}%"}
            continue
        base = _percentile(clocks, p.baseline_percentile)
        limit = base * (1.0 - p.drop_fraction)
        baselines[clock_key] = {"baseline_mhz": round(base, 1), "loaded_samples": len(clocks),
                                "drop_below_mhz": round(limit, 1)}
        drop = [ok and c < limit for (_, c, _), ok in zip(rows, sustained)]
        ts = [t for t, _, _ in rows]
        for a, b in _runs(drop):
            if b - a < p.min_drop_samples:
                continue
            low = min(c for _, c, _ in rows[a:b])
            start, end = _span(ts, a, b)
            out.append({"device": clock_key.split(".", 1)[0], "source": "clock_drop", "start_t": start, "end_t": end,
                        "detail": f"{clock_key} fell to {low:g} MHz under load, {100 * (1 - low / base):.0f}% below the "
                                  f"run's loaded baseline {base:.0f} MHz"})
    return out, baselines


def _merge(raw: list[dict]) -> list[dict]:
    episodes: list[dict] = []
    for ev in sorted(raw, key=lambda e: (e["device"], e["start_t"], e["end_t"])):
        last = episodes[-1] if episodes else None
        if last and last["device"] == ev["device"] and ev["start_t"] <= last["end_t"]:
            last["end_t"] = max(last["end_t"], ev["end_t"])
            last["evidence"].append({k: ev[k] for k in ("source", "detail", "start_t", "end_t")})
        else:
            episodes.append({"device": ev["device"], "start_t": ev["start_t"], "end_t": ev["end_t"],
                             "evidence": [{k: ev[k] for k in ("source", "detail", "start_t", "end_t")}]})
    for e in episodes:
        e["duration_s"] = round(e["end_t"] - e["start_t"], 3)
        e["sources"] = sorted({x["source"] for x in e["evidence"]})
    return sorted(episodes, key=lambda e: (e["start_t"], e["device"]))


def detect(samples: list[dict[str, Any]], clock_load_pairs: list[tuple[str, str]],
           params: ThrottleParams | None = None) -> dict[str, Any]:
    p = params or ThrottleParams()
    gm, ignored = _gpu_metrics_episodes(samples)
    drops, baselines = _clock_drop_episodes(samples, clock_load_pairs, p)
    episodes = _merge(_nvml_episodes(samples) + gm + drops)
    return {
        "episodes": episodes,
        "ignored_bits": ignored,
        "clock_baselines": baselines,
        "params": {"load_threshold_pct": p.load_threshold_pct, "sustained_samples": p.sustained_samples,
                   "drop_fraction": p.drop_fraction, "min_drop_samples": p.min_drop_samples,
                   "baseline_percentile": p.baseline_percentile},
    }
