"""bench-tokenizer: MB/s of each side and their ratio, per text kind; whether the ids stayed
identical. The report keeps only the best and median pass, so no interval can be drawn: the
change is shown as a ratio, and a corpus of another size or seed is flagged."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.reports.diff.stats import fmt

KIND = "bench-tokenizer"


def _ratio(a: float | None, b: float | None) -> float | None:
    return b / a if a and b is not None else None


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    ra, rb = a["results"], b["results"]
    sides = {}
    for side in ("ours", "hf"):
        xa, xb = ra[side], rb[side]
        kinds = sorted(set(xa["mb_per_s_by_kind"]) & set(xb["mb_per_s_by_kind"]))
        sides[side] = {"mb_per_s": {"a": xa["mb_per_s"], "b": xb["mb_per_s"],
                                    "b_over_a": _ratio(xa["mb_per_s"], xb["mb_per_s"])},
                       "by_kind": {k: {"a": xa["mb_per_s_by_kind"][k], "b": xb["mb_per_s_by_kind"][k],
                                       "b_over_a": _ratio(xa["mb_per_s_by_kind"][k], xb["mb_per_s_by_kind"][k])}
                                   for k in kinds}}
    ca, cb = ra["corpus"], rb["corpus"]
    return {"sides": sides, "ratio": {"a": ra["ratio"], "b": rb["ratio"]},
            "ids_identical": {"a": ra["ids_identical"], "b": rb["ids_identical"]},
            "same_corpus": (ca["bytes"], ca["seed"]) == (cb["bytes"], cb["seed"])}


def markdown(d: dict[str, Any]) -> str:
    out = [f"- ours / HF: A {fmt(d['ratio']['a'])}x, B {fmt(d['ratio']['b'])}x; ids identical: "
           f"A {d['ids_identical']['a']}, B {d['ids_identical']['b']}"
           + ("" if d["same_corpus"] else " (the corpora differ in size or seed)"), "",
           "| side | kind | MB/s A | MB/s B | B / A |", "|---|---|---|---|---|"]
    for side, s in d["sides"].items():
        m = s["mb_per_s"]
        out.append(f"| {side} | all | {fmt(m['a'])} | {fmt(m['b'])} | {fmt(m['b_over_a'])} |")
        out += [f"| {side} | {k} | {fmt(v['a'])} | {fmt(v['b'])} | {fmt(v['b_over_a'])} |" for k, v in s["by_kind"].items()]
    return "\n".join(out) + "\n"
