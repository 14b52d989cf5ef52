"""probe-prefix-cache: verdict, and per turn (paired by id) the reuse each run reached and its
prefill fraction of the cold time."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.reports.diff.pairs import paired, unpaired, unpaired_lines
from ds4kit.reports.diff.stats import fmt

KIND = "probe-prefix-cache"


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    ta = {t["id"]: t for t in a["results"]["turns"]}
    tb = {t["id"]: t for t in b["results"]["turns"]}
    turns = []
    for tid in paired(ta, tb):
        x, y = ta[tid], tb[tid]
        turns.append({"id": tid, "prompt_tokens": {"a": x["prompt_tokens"], "b": y["prompt_tokens"]},
                      "expected_reuse": {"a": x["expected_reuse"], "b": y["expected_reuse"]},
                      "actual_reuse": {"a": x["actual_reuse"], "b": y["actual_reuse"]},
                      "prefill_fraction": {"a": x.get("prefill_fraction"), "b": y.get("prefill_fraction")},
                      "answer_identical": {"a": x.get("answer_identical"), "b": y.get("answer_identical")}})
    return {"verdict": {"a": a["results"]["verdict"], "b": b["results"]["verdict"]},
            "suite": {"a": a["results"]["suite"].get("id"), "b": b["results"]["suite"].get("id")},
            "turns": turns, "unpaired": unpaired(ta, tb)}


def markdown(d: dict[str, Any]) -> str:
    out = [f"- verdict: A {d['verdict']['a']} ({d['suite']['a']}), B {d['verdict']['b']} ({d['suite']['b']})", "",
           "| turn | prompt tokens A/B | ideal reuse A/B | actual reuse A/B | prefill / cold A | B | identical A/B |",
           "|---|---|---|---|---|---|---|"]
    for t in d["turns"]:
        out.append(f"| {t['id']} | {t['prompt_tokens']['a']}/{t['prompt_tokens']['b']} | "
                   f"{t['expected_reuse']['a']}/{t['expected_reuse']['b']} | "
                   f"{t['actual_reuse']['a']}/{t['actual_reuse']['b']} | {fmt(t['prefill_fraction']['a'])} | "
                   f"{fmt(t['prefill_fraction']['b'])} | {t['answer_identical']['a']}/{t['answer_identical']['b']} |")
    out += unpaired_lines(d["unpaired"])
    return "\n".join(out) + "\n"
