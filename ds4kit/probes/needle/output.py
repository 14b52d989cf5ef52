"""The needle probe's report results and summary.md."""
from __future__ import annotations

from typing import Any


def results_dict(spec: Any, cells: list[dict[str, Any]], settings: dict[str, Any], *, arms: list[str],
                 total: int) -> dict[str, Any]:
    score = {a: {"found": sum(1 for c in cells if c["arms"][a]["found"]),
                 "cells": sum(1 for c in cells if a in c["arms"])} for a in arms}
    for a in arms:
        score[a]["rate"] = score[a]["found"] / score[a]["cells"] if score[a]["cells"] else None
    slim = [{**c, "arms": {a: {k: v for k, v in r.items() if k != "ids"} for a, r in c["arms"].items()}}
            for c in cells]
    return {"needle": {"id": spec.id, "text": spec.text, "needle": spec.needle, "question": spec.question,
                       "answer": spec.answer},
            "settings": settings, "arms": arms, "cells_total": total, "cells_done": len(cells),
            "score": score, "arms_agree": sum(1 for c in cells if c["arms_agree"]),
            "arms_differ": [c["id"] for c in cells if c["arms_agree"] is False], "cells": slim}


def _rate(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def summary_md(r: dict[str, Any]) -> str:
    lines = [f"## Needle: {r['needle']['answer']!r}", "",
             f"{r['cells_done']} of {r['cells_total']} cells. Found (exact literal): "
             + ", ".join(f"{a} {s['found']}/{s['cells']}" for a, s in r["score"].items()) + ".", ""]
    if "restored" in r["arms"]:
        lines += [f"Arms agree (token ids) on {r['arms_agree']} of {r['cells_done']} cells"
                  + (f"; differ on {', '.join(r['arms_differ'])}" if r["arms_differ"] else "") + ".", ""]
    lines += ["| cell | context | needle at | depth % | cold answer | found | edits | restored found | agree | "
              "cold prefill tok/s | restored prefill tok/s | decode tok/s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in r["cells"]:
        cold, warm = c["arms"]["cold"], c["arms"].get("restored")
        lines.append(f"| {c['id']} | {c['context_tokens']} | {c['needle_position']} | {c['depth_actual']:.1f} | "
                     f"{cold['answer'][:40]!r} | {cold['found']} | {'; '.join(cold['edits'][:2]) or '-'} | "
                     f"{warm['found'] if warm else '-'} | {c['arms_agree']} | {_rate(cold['prefill_tok_s'])} | "
                     f"{_rate(warm['prefill_tok_s']) if warm else '-'} | {_rate(cold['decode_tok_s'])} |")
    return "\n".join(lines) + "\n"
