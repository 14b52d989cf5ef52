"""Turn a finished sample series into the ``results`` of a thermal report and its summary.md."""
from __future__ import annotations

from typing import Any

from ds4kit.thermal.sensors import Discovery
from ds4kit.thermal.stats import metric_stats, peak_temperature, time_above, watched_temperature
from ds4kit.thermal.throttle import ThrottleParams, detect


def sensors_section(discovery: Discovery) -> dict[str, Any]:
    return {
        "found": [s.info() for s in discovery.sensors],
        "unavailable": [u.as_dict() for u in discovery.unavailable],
        "read_errors": [{"sensor": s.name, "item": item, "message": msg, "errors_total": s.read_error_count}
                        for s in discovery.sensors for item, msg in s.read_errors.items()],
    }


def telemetry_results(discovery: Discovery, samples: list[dict[str, Any]], *, interval: float, missed_ticks: int,
                      temp_patterns: tuple[str, ...], warn_at: float | None = None, abort_at: float | None = None,
                      throttle_params: ThrottleParams | None = None) -> dict[str, Any]:
    """The part every telemetry consumer shares (the CLI adds the watch-specific fields)."""
    throttle = detect(samples, discovery.clock_load_pairs(), throttle_params)
    for e in throttle["episodes"]:
        # How hot it was while throttled: tells a thermal limit from a power cap at a glance.
        temps = [watched_temperature(s["values"], temp_patterns)[0] for s in samples
                 if e["start_t"] <= s["t"] <= e["end_t"]]
        temps = [t for t in temps if t is not None]
        e["peak_temp_c"] = max(temps) if temps else None
    phases: dict[str, int] = {}
    for s in samples:
        phases[s["phase"]] = phases.get(s["phase"], 0) + 1
    gaps = [b["t"] - a["t"] for a, b in zip(samples, samples[1:])]
    return {
        "sensors": sensors_section(discovery),
        "samples": {
            "count": len(samples), "interval_s": interval, "missed_ticks": missed_ticks,
            "span_s": round(samples[-1]["t"] - samples[0]["t"], 3) if samples else 0.0,
            "max_gap_s": round(max(gaps), 3) if gaps else None, "by_phase": phases,
        },
        "metrics": metric_stats(samples),
        "watched_temperature": {
            "patterns": list(temp_patterns),
            "peak": peak_temperature(samples, temp_patterns),
            "warn_at_c": warn_at, "abort_at_c": abort_at,
            "time_above_warn_s": time_above(samples, warn_at, temp_patterns),
            "time_above_abort_s": time_above(samples, abort_at, temp_patterns),
        },
        "throttle": throttle,
    }


def _fmt(v: Any) -> str:
    return "n/a" if v is None else f"{v:g}" if isinstance(v, (int, float)) else str(v)


def summary_markdown(results: dict[str, Any], files: dict[str, str]) -> str:
    r = results
    lines = []
    if r.get("end_reason"):
        lines += [f"**{r['end_reason']}** (exit code {r.get('exit_code')})", ""]
    wt = r["watched_temperature"]
    peak = wt["peak"]
    lines.append("## Temperatures")
    lines.append(f"- peak watched: {_fmt(peak['value_c']) + ' C (' + peak['metric'] + ' at t=' + _fmt(peak['t']) + ' s)' if peak else 'no temperature readings'}")
    if wt["warn_at_c"] is not None:
        lines.append(f"- time at or above warn {wt['warn_at_c']:g} C: {_fmt(wt['time_above_warn_s'])} s")
    if r.get("abort"):
        a = r["abort"]
        sigs = ", ".join(f"{s['signal']}@{s['t']:g}s" for s in a["signals"]) or "none (no command)"
        lines.append(f"- **ABORT** at t={a['t']:g} s: {a['reason']}; signals: {sigs}")
    if r.get("cooldown"):
        c = r["cooldown"]
        lines.append(f"- cooldown to < {c['target_c']:g} C: {'reached' if c['reached'] else 'NOT reached'} after {c['waited_s']:g} s")
    lines += ["", "## Sensors", ""]
    for s in r["sensors"]["found"]:
        lines.append(f"- {s['name']}: {s['description']}")
    for u in r["sensors"]["unavailable"]:
        lines.append(f"- unavailable {u['name']}: {u['reason']}")
    for e in r["sensors"]["read_errors"]:
        lines.append(f"- read errors {e['sensor']} {e['item']}: {e['message']}")
    lines += ["", "## Readings", "", "| metric | min | median | max |", "|---|---:|---:|---:|"]
    for k, m in r["metrics"].items():
        lines.append(f"| {k} ({m['unit']}) | {m['min']:g} | {m['median']:g} | {m['max']:g} |")
    th = r["throttle"]
    lines += ["", f"## Throttle episodes: {len(th['episodes'])}", ""]
    for e in th["episodes"]:
        lines.append(f"- {e['device']} t={e['start_t']:g}..{e['end_t']:g} s ({e['duration_s']:g} s, peak "
                     f"{_fmt(e['peak_temp_c'])} C), evidence: "
                     + "; ".join(x["detail"] for x in e["evidence"]))
    for b in th["ignored_bits"]:
        lines.append(f"- ignored {b['device']} bit {b['bit']}: {b['reason']}")
    s = r["samples"]
    lines += ["", f"{s['count']} samples every {s['interval_s']:g} s over {s['span_s']:g} s "
              f"({s['missed_ticks']} ticks missed).", ""]
    lines += [f"- {label}: `{name}`" for label, name in files.items()]
    return "\n".join(lines) + "\n"
