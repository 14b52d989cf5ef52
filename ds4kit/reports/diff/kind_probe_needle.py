"""probe-needle: found rates per arm, and per cell (paired by id) which runs found the needle:
cells found in one run only are the changes."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.reports.diff.pairs import paired, unpaired, unpaired_lines
from ds4kit.reports.diff.stats import fmt, mcnemar_exact

KIND = "probe-needle"


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    ca = {c["id"]: c for c in a["results"]["cells"]}
    cb = {c["id"]: c for c in b["results"]["cells"]}
    arms = paired(a["results"]["arms"], b["results"]["arms"])
    per_arm = {}
    for arm in arms:
        gained, lost, both, neither = [], [], 0, 0
        for cid in paired(ca, cb):
            fa, fb = ca[cid]["arms"][arm]["found"], cb[cid]["arms"][arm]["found"]
            if fa and fb:
                both += 1
            elif not fa and not fb:
                neither += 1
            elif fb:
                gained.append(cid)
            else:
                lost.append(cid)
        per_arm[arm] = {"rate_a": a["results"]["score"][arm]["rate"], "rate_b": b["results"]["score"][arm]["rate"],
                        "both": both, "neither": neither, "found_in_b_only": gained, "found_in_a_only": lost,
                        "mcnemar_p": mcnemar_exact(len(lost), len(gained))}
    return {"arms": per_arm, "paired_cells": len(paired(ca, cb)), "unpaired": unpaired(ca, cb)}


def markdown(d: dict[str, Any]) -> str:
    out = [f"{d['paired_cells']} cells in both runs.", "",
           "| arm | found A | found B | both | neither | B only | A only | McNemar p |", "|---|---|---|---|---|---|---|---|"]
    for arm, r in d["arms"].items():
        out.append(f"| {arm} | {fmt(r['rate_a'])} | {fmt(r['rate_b'])} | {r['both']} | {r['neither']} | "
                   f"{', '.join(r['found_in_b_only']) or '-'} | {', '.join(r['found_in_a_only']) or '-'} | "
                   f"{fmt(r['mcnemar_p'])} |")
    out += unpaired_lines(d["unpaired"])
    return "\n".join(out) + "\n"
