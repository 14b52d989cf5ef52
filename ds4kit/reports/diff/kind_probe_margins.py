"""probe-margins: verdict, rows bitwise equal, largest |dlogit| and argmax flips, overall and per
verify width."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.reports.diff.pairs import unpaired
from ds4kit.reports.diff.stats import fmt

KIND = "probe-margins"
FIELDS = ("rows", "bitwise_equal_rows", "max_abs_dlogit", "median_abs_dlogit", "flips", "counted_flips",
          "min_flip_margin")


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    ra, rb = a["results"], b["results"]
    wa = {w["width"]: w for w in ra.get("per_width") or []}
    wb = {w["width"]: w for w in rb.get("per_width") or []}
    return {"verdict": {"a": ra["verdict"], "b": rb["verdict"]},
            "target": {"a": ra.get("target_kind"), "b": rb.get("target_kind")},
            "tolerance": {"a": ra.get("tolerance"), "b": rb.get("tolerance")},
            "overall": {k: {"a": ra.get(k), "b": rb.get(k)} for k in FIELDS},
            "per_width": [{"width": w, **{k: {"a": wa[w].get(k), "b": wb[w].get(k)} for k in FIELDS}}
                          for w in sorted(set(wa) & set(wb))],
            "unpaired_widths": unpaired(wa, wb)}


def markdown(d: dict[str, Any]) -> str:
    o = d["overall"]
    out = [f"- verdict: A {d['verdict']['a']} ({d['target']['a']}), B {d['verdict']['b']} ({d['target']['b']}); "
           f"tolerance A {fmt(d['tolerance']['a'])}, B {fmt(d['tolerance']['b'])}",
           f"- rows bitwise equal: A {o['bitwise_equal_rows']['a']}/{o['rows']['a']}, "
           f"B {o['bitwise_equal_rows']['b']}/{o['rows']['b']}; max |dlogit| A {fmt(o['max_abs_dlogit']['a'])}, "
           f"B {fmt(o['max_abs_dlogit']['b'])}; flips A {o['flips']['a']} ({o['counted_flips']['a']} counted), "
           f"B {o['flips']['b']} ({o['counted_flips']['b']} counted)", "",
           "| width | equal rows A | equal rows B | max \\|dlogit\\| A | max \\|dlogit\\| B | flips A | flips B |",
           "|---|---|---|---|---|---|---|"]
    for w in d["per_width"]:
        out.append(f"| {w['width']} | {w['bitwise_equal_rows']['a']}/{w['rows']['a']} | "
                   f"{w['bitwise_equal_rows']['b']}/{w['rows']['b']} | {fmt(w['max_abs_dlogit']['a'])} | "
                   f"{fmt(w['max_abs_dlogit']['b'])} | {w['flips']['a']} | {w['flips']['b']} |")
    return "\n".join(out) + "\n"
