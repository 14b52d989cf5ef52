"""bench-engine: throughput per engine and test, bootstrap confidence intervals over the
repetitions (tok/s of each repetition = n_tokens / its seconds)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.reports.diff.pairs import paired, unpaired, unpaired_lines
from ds4kit.reports.diff.stats import bootstrap_mean_diff, fmt

KIND = "bench-engine"


def _rep_tok_s(test: dict[str, Any]) -> list[float]:
    return [test["n_tokens"] / s for s in test.get("seconds") or [] if s and s > 0]


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    ea, eb = a["results"].get("engines") or {}, b["results"].get("engines") or {}
    rows = []
    for engine in paired(ea, eb):
        tests_a, tests_b = ea[engine].get("tests") or {}, eb[engine].get("tests") or {}
        for test in paired(tests_a, tests_b):
            ci = bootstrap_mean_diff(_rep_tok_s(tests_a[test]), _rep_tok_s(tests_b[test]))
            significant = ci["diff_lo"] is not None and (ci["diff_lo"] > 0 or ci["diff_hi"] < 0)
            rows.append({"engine": engine, "test": test, **ci, "significant": significant})
    sa, sb = a["results"].get("settings") or {}, b["results"].get("settings") or {}
    return {"throughput": rows, "settings_changed": {k: {"a": sa.get(k), "b": sb.get(k)}
                                                     for k in sorted(set(sa) | set(sb)) if sa.get(k) != sb.get(k)},
            "unpaired": unpaired((f"{e}/{t}" for e in ea for t in (ea[e].get("tests") or {})),
                                 (f"{e}/{t}" for e in eb for t in (eb[e].get("tests") or {})))}


def markdown(d: dict[str, Any]) -> str:
    out = ["| engine | test | reps A/B | tok/s A | tok/s B | B - A (95% CI) | B / A (95% CI) | CI excludes 0 |",
           "|---|---|---|---|---|---|---|---|"]
    for r in d["throughput"]:
        out.append(f"| {r['engine']} | {r['test']} | {r['n_a']}/{r['n_b']} | {fmt(r['mean_a'])} | {fmt(r['mean_b'])} | "
                   f"{fmt(r['diff'])} [{fmt(r['diff_lo'])}, {fmt(r['diff_hi'])}] | {fmt(r['ratio'])} "
                   f"[{fmt(r['ratio_lo'])}, {fmt(r['ratio_hi'])}] | {'yes' if r['significant'] else 'no'} |")
    if d["settings_changed"]:
        out += ["", "Settings that differ: " + ", ".join(f"{k} {v['a']!r} -> {v['b']!r}"
                                                          for k, v in d["settings_changed"].items())]
    out += unpaired_lines(d["unpaired"])
    out += ["", "Intervals: percentile bootstrap (10000 resamples, seeded) of the mean over repetitions; with "
            "few repetitions they are wide and rough."]
    return "\n".join(out) + "\n"
