"""eval-humaneval: per-task pass/fail paired by task_id, McNemar's exact test per measure."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.reports.diff.stats import fmt, mcnemar_exact

KIND = "eval-humaneval"


def _paired(ta: dict, tb: dict, key: str) -> dict[str, Any]:
    common = [t for t in ta if t in tb]
    both = [t for t in common if ta[t][key] == "pass" and tb[t][key] == "pass"]
    fixed = [t for t in common if ta[t][key] != "pass" and tb[t][key] == "pass"]
    broke = [t for t in common if ta[t][key] == "pass" and tb[t][key] != "pass"]
    n = len(common)
    return {"tasks": n, "both_pass": len(both), "only_b_passes": len(fixed), "only_a_passes": len(broke),
            "neither": n - len(both) - len(fixed) - len(broke),
            "pass_at_1_a": (len(both) + len(broke)) / n if n else None,
            "pass_at_1_b": (len(both) + len(fixed)) / n if n else None,
            "mcnemar_p": mcnemar_exact(len(broke), len(fixed)), "fixed": fixed, "broke": broke}


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    ra, rb = a["results"], b["results"]
    ta = {t["task_id"]: t for t in ra["tasks"]}
    tb = {t["task_id"]: t for t in rb["tasks"]}
    measures = {"base": _paired(ta, tb, "base")}
    if ra["pass_at_1"]["plus"] is not None and rb["pass_at_1"]["plus"] is not None:
        measures["plus"] = _paired(ta, tb, "plus")
    changed = [{"task_id": t, "a": ta[t]["category"], "b": tb[t]["category"]}
               for t in ta if t in tb and ta[t]["category"] != tb[t]["category"]]
    return {
        "same_dataset": ra["dataset"]["sha256"] == rb["dataset"]["sha256"],
        "dataset_a": ra["dataset"]["sha256"], "dataset_b": rb["dataset"]["sha256"],
        "only_in_a": sorted(set(ta) - set(tb)), "only_in_b": sorted(set(tb) - set(ta)),
        "measures": measures,
        "categories": {c: {"a": ra["categories"][c], "b": rb["categories"][c],
                           "delta": rb["categories"][c] - ra["categories"][c]} for c in ra["categories"]},
        "category_changes": changed,
    }


def markdown(d: dict[str, Any]) -> str:
    out = []
    if not d["same_dataset"]:
        out += [f"**WARNING: different datasets** (A sha256 {d['dataset_a']}, B {d['dataset_b']}); "
                "only tasks in both are paired.", ""]
    out += ["| measure | tasks | pass@1 A | pass@1 B | only A passes | only B passes | McNemar exact p |",
            "|---|---|---|---|---|---|---|"]
    for name, m in d["measures"].items():
        out.append(f"| {name} | {m['tasks']} | {fmt(m['pass_at_1_a'])} | {fmt(m['pass_at_1_b'])} | "
                   f"{m['only_a_passes']} | {m['only_b_passes']} | {fmt(m['mcnemar_p'])} |")
    out += ["", "| category | A | B | B - A |", "|---|---|---|---|"]
    out += [f"| {c} | {v['a']} | {v['b']} | {v['delta']:+d} |" for c, v in d["categories"].items()]
    if d["category_changes"]:
        out += ["", "| task | A | B |", "|---|---|---|"]
        out += [f"| {c['task_id']} | {c['a']} | {c['b']} |" for c in d["category_changes"][:200]]
    for side in ("only_in_a", "only_in_b"):
        if d[side]:
            out += ["", f"- {side.replace('_', ' ')}: {', '.join(d[side][:50])}"]
    return "\n".join(out) + "\n"
