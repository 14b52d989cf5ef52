"""What the prefix-cache probe writes: report results, turns.jsonl, summary.md."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def results_dict(suite: Any, rows: list[dict[str, Any]], judged: dict[str, Any], *, cache: Any,
                 state_bytes: dict[str, Any],
                 max_tokens: int, max_ctx: int, thinking: bool, arms: tuple[str, ...], prefill_mode: str,
                 cache_mb: int) -> dict[str, Any]:
    turns = [{k: v for k, v in r.items() if k not in ("ids", "ids_off", "text")} for r in rows]
    entries = cache.entries() if cache is not None else []
    return {
        "verdict": judged["verdict"], "rule": judged["rule"], "failures": judged["failures"],
        "short_of_ideal": judged["short_of_ideal"], "turns_ideal": judged["turns_ideal"],
        "suite": {"id": suite.id, "description": suite.description, "source": suite.source,
                  "conversations": [c.id for c in suite.conversations]},
        "settings": {"arms": list(arms), "max_tokens": max_tokens, "max_ctx": max_ctx, "thinking": thinking,
                     "prefill_mode": prefill_mode, "sampling": "greedy", "cache_mb": cache_mb},
        "turns": turns,
        "cache": {"stats": dict(cache.stats) if cache is not None else None,
                  "entries": entries, "state": state_bytes},
    }


def write_turns(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def summary_md(results: dict[str, Any]) -> str:
    lines = [f"## Verdict: {results['verdict']}", "", f"Rule: {results['rule']}.", ""]
    for f in results["failures"]:
        lines.append(f"- FAIL {f}")
    for s in results["short_of_ideal"]:
        lines.append(f"- {s['id']}: ideal reuse {s['expected_reuse']}, reachable {s['reachable_reuse']} ({s['reason']})")
    lines += ["", "| turn | prompt tokens | expected reuse | reachable | actual reuse | restore s | suffix prefill s | "
              "cold prefill s | fraction of cold | identical |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["turns"]:
        frac = r.get("prefill_fraction")
        lines.append(f"| {r['id']} | {r['prompt_tokens']} | {r['expected_reuse']} | {r['reachable_reuse']} | "
                     f"{r['actual_reuse']} | {_s(r.get('restore_s'))} | {_s(r.get('suffix_prefill_s'))} | "
                     f"{_s(r['cold_prefill_s'])} | {'-' if frac is None else f'{100 * frac:.2f} %'} | "
                     f"{r['answer_identical']} |")
    c = results["cache"]
    if c["entries"]:
        st = c["state"]
        lines += ["", f"The longest snapshot ({st['at_tokens']} tokens) holds {st['snapshot_bytes']} bytes; a session "
                  f"restored from it {st['state_bytes']} bytes of state (max_ctx {results['settings']['max_ctx']}; "
                  "a live session may hold more, scripts/snapshot-bytes). Cache entries (tokens: snapshot bytes): "
                  + ", ".join(f"{e['tokens']}: {e['snapshot_bytes']}" for e in c["entries"])]
    return "\n".join(lines) + "\n"
