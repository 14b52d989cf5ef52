"""probe-identity: per arm, whether each run was identical, whether the two runs produced the
same tokens (sha256), and throughput with a bootstrap interval over the timed items' tok/s."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.reports.diff.pairs import paired, unpaired, unpaired_lines
from ds4kit.reports.diff.stats import bootstrap_mean_diff, fmt
from ds4kit.reports.jsonl import read_jsonl_objects

KIND = "probe-identity"


def _item_tok_s(folder: Path, arm: str) -> list[float]:
    path = folder / "items.jsonl"
    if not path.exists():
        return []
    return [r["tok_s"] for r in read_jsonl_objects(path)
            if r.get("arm") == arm and not r.get("warmup") and r.get("tok_s")]


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    arms_a = {x["name"]: x for x in a["results"]["arms"]}
    arms_b = {x["name"]: x for x in b["results"]["arms"]}
    rows = []
    for name in paired(arms_a, arms_b):
        xa, xb = arms_a[name], arms_b[name]
        sa, sb = xa.get("speculation") or {}, xb.get("speculation") or {}
        rows.append({"arm": name, "identical_a": xa["identical"], "identical_b": xb["identical"],
                     "same_tokens": xa["sha256"] == xb["sha256"],
                     "speedup_a": xa.get("speedup"), "speedup_b": xb.get("speedup"),
                     "acceptance_a": sa.get("acceptance_rate"), "acceptance_b": sb.get("acceptance_rate"),
                     "tok_s": bootstrap_mean_diff(_item_tok_s(a_dir, name), _item_tok_s(b_dir, name))})
    return {"verdict": {"a": a["results"]["verdict"], "b": b["results"]["verdict"]}, "arms": rows,
            "suite_same": a["results"]["suite"].get("sha256") == b["results"]["suite"].get("sha256"),
            "unpaired": unpaired(arms_a, arms_b)}


def markdown(d: dict[str, Any]) -> str:
    out = [f"- verdict: A {d['verdict']['a']}, B {d['verdict']['b']}"
           + ("" if d["suite_same"] else " (the suites differ: tokens are not comparable)"), "",
           "| arm | identical A/B | same tokens | speedup A | speedup B | acceptance A | acceptance B | "
           "tok/s A | tok/s B | B / A (95% CI) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in d["arms"]:
        t = r["tok_s"]
        out.append(f"| {r['arm']} | {'yes' if r['identical_a'] else 'NO'}/{'yes' if r['identical_b'] else 'NO'} | "
                   f"{'yes' if r['same_tokens'] else 'no'} | {fmt(r['speedup_a'])} | {fmt(r['speedup_b'])} | "
                   f"{fmt(r['acceptance_a'])} | {fmt(r['acceptance_b'])} | {fmt(t['mean_a'])} | {fmt(t['mean_b'])} | "
                   f"{fmt(t['ratio'])} [{fmt(t['ratio_lo'])}, {fmt(t['ratio_hi'])}] |")
    out += unpaired_lines(d["unpaired"])
    out += ["", "tok/s intervals: percentile bootstrap over the timed items (warmup items excluded)."]
    return "\n".join(out) + "\n"
