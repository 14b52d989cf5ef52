"""thermal: peaks per metric, the watched temperature's peak, time above the thresholds and
throttle episodes."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.reports.diff.stats import fmt

KIND = "thermal"


def _watched(r: dict[str, Any]) -> dict[str, Any]:
    w = r.get("watched_temperature") or {}
    peak = w.get("peak") or {}
    return {"peak_c": peak.get("value_c"), "metric": peak.get("metric"),
            "time_above_warn_s": w.get("time_above_warn_s"), "time_above_abort_s": w.get("time_above_abort_s")}


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    ra, rb = a["results"], b["results"]
    ma, mb = ra.get("metrics") or {}, rb.get("metrics") or {}
    peaks = []
    for name in sorted(set(ma) & set(mb)):
        pa, pb = ma[name].get("max"), mb[name].get("max")
        peaks.append({"metric": name, "unit": ma[name].get("unit"), "peak_a": pa, "peak_b": pb,
                      "delta": pb - pa if pa is not None and pb is not None else None,
                      "median_a": ma[name].get("median"), "median_b": mb[name].get("median")})
    ea = ((ra.get("throttle") or {}).get("episodes")) or []
    eb = ((rb.get("throttle") or {}).get("episodes")) or []
    return {"peaks": peaks, "watched": {"a": _watched(ra), "b": _watched(rb)},
            "throttle_episodes": {"a": len(ea), "b": len(eb)},
            "span_s": {"a": (ra.get("samples") or {}).get("span_s"), "b": (rb.get("samples") or {}).get("span_s")},
            "only_in_a": sorted(set(ma) - set(mb)), "only_in_b": sorted(set(mb) - set(ma))}


def markdown(d: dict[str, Any]) -> str:
    wa, wb = d["watched"]["a"], d["watched"]["b"]
    out = [f"- watched temperature peak: A {fmt(wa['peak_c'])} C ({wa['metric']}), B {fmt(wb['peak_c'])} C "
           f"({wb['metric']}); time above warn: A {fmt(wa['time_above_warn_s'])} s, B {fmt(wb['time_above_warn_s'])} s",
           f"- throttle episodes: A {d['throttle_episodes']['a']}, B {d['throttle_episodes']['b']}",
           f"- sampled span: A {fmt(d['span_s']['a'])} s, B {fmt(d['span_s']['b'])} s", "",
           "| metric | unit | peak A | peak B | B - A | median A | median B |", "|---|---|---|---|---|---|---|"]
    out += [f"| {p['metric']} | {p['unit']} | {fmt(p['peak_a'])} | {fmt(p['peak_b'])} | {fmt(p['delta'])} | "
            f"{fmt(p['median_a'])} | {fmt(p['median_b'])} |" for p in d["peaks"]]
    return "\n".join(out) + "\n"
