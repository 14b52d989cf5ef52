"""generate: the same prompt and settings? the same tokens (first divergence)? and speed, with
a bootstrap interval over per-token decode times from each run's tokens.csv."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ds4kit.reports.diff.stats import bootstrap_mean_diff, fmt

KIND = "generate"


def _token_times(rep: dict, folder: Path) -> list[float]:
    name = (rep.get("files") or {}).get("tokens")
    path = folder / name if name else None
    if path is None or not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return [float(row["elapsed_s"]) for row in csv.DictReader(f) if row.get("elapsed_s")]


def _first_divergence(x: list[int], y: list[int]) -> int | None:
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q:
            return i
    return None if len(x) == len(y) else min(len(x), len(y))


def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict[str, Any]:
    ra, rb = a["results"], b["results"]
    ids_a, ids_b = ra["output"]["ids"], rb["output"]["ids"]
    sa = {k: v for k, v in ra["sampling"].items() if k != "source"}
    sb = {k: v for k, v in rb["sampling"].items() if k != "source"}
    times = bootstrap_mean_diff(_token_times(a, a_dir), _token_times(b, b_dir))
    ta, tb = ra["timings"], rb["timings"]
    return {
        "same_prompt": ra["prompt"]["ids"] == rb["prompt"]["ids"],
        "sampling_changed": {k: {"a": sa.get(k), "b": sb.get(k)} for k in sorted(set(sa) | set(sb))
                             if sa.get(k) != sb.get(k)},
        "same_output": ids_a == ids_b, "first_divergence": _first_divergence(ids_a, ids_b),
        "output_tokens": {"a": len(ids_a), "b": len(ids_b)},
        "stop": {"a": ra["stop"]["reason"], "b": rb["stop"]["reason"]},
        "prefill_tok_s": {"a": ta.get("prefill_tok_s"), "b": tb.get("prefill_tok_s")},
        "decode_tok_s": {"a": ta.get("decode_tok_s"), "b": tb.get("decode_tok_s")},
        "token_seconds": times,
    }


def markdown(d: dict[str, Any]) -> str:
    div = d["first_divergence"]
    t = d["token_seconds"]
    out = [f"- prompt: {'the same' if d['same_prompt'] else 'DIFFERENT'} token ids",
           f"- output: {'identical' if d['same_output'] else f'differs from token {div}'} "
           f"({d['output_tokens']['a']} vs {d['output_tokens']['b']} tokens; stop {d['stop']['a']} vs {d['stop']['b']})",
           f"- prefill: {fmt(d['prefill_tok_s']['a'])} vs {fmt(d['prefill_tok_s']['b'])} tok/s; decode: "
           f"{fmt(d['decode_tok_s']['a'])} vs {fmt(d['decode_tok_s']['b'])} tok/s",
           f"- seconds per token (tokens.csv, {t['n_a']} vs {t['n_b']} tokens): {fmt(t['mean_a'])} vs {fmt(t['mean_b'])}, "
           f"B - A {fmt(t['diff'])} [{fmt(t['diff_lo'])}, {fmt(t['diff_hi'])}] (95% bootstrap CI)"]
    if d["sampling_changed"]:
        out.append("- sampling that differs: " + ", ".join(f"{k} {v['a']!r} -> {v['b']!r}"
                                                          for k, v in d["sampling_changed"].items()))
    return "\n".join(out) + "\n"
