"""What a `generate` run writes: tokens.csv, logprobs.jsonl, the report's results and summary.md."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Callable, Sequence

from ds4kit.engine.generate import GenerationResult


def write_token_table(path: Path, res: GenerationResult, piece: Callable[[Sequence[int]], str]) -> None:
    by_index = {row["index"]: row for row in res.logprobs}
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["index", "token", "piece", "elapsed_s", "logprob", "top2_margin"])
        for i, (tok, dt) in enumerate(zip(res.tokens, res.token_times_s)):
            row = by_index.get(i, {})
            w.writerow([i, tok, piece([tok]), f"{dt:.6f}", row.get("logprob", ""), row.get("top2_margin", "")])


def write_logprobs(path: Path, res: GenerationResult) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in res.logprobs:
            f.write(json.dumps(row) + "\n")


def rate(v: float | None) -> str:
    return f"{v:.2f} tok/s" if v else "n/a"


def results_dict(res: GenerationResult, *, prompt_text: str, values: dict[str, Any], source: dict[str, str],
                 seed: int, thinking: bool, effort: str | None, budget: Any, budget_tokens: int | None,
                 max_tokens: int, max_ctx: int, prefill_mode: str, threads: int | None, logprobs: int,
                 not_measured: list[dict[str, str]]) -> dict[str, Any]:
    import numpy as np

    times = np.array(res.token_times_s) if res.token_times_s else np.zeros(0)
    margins = [r["top2_margin"] for r in res.logprobs if r.get("top2_margin") is not None]
    return {
        "prompt": {"text": prompt_text, "n_tokens": len(res.prompt_ids), "ids": res.prompt_ids},
        "output": {"text": res.text, "n_tokens": len(res.tokens), "ids": res.tokens},
        "stop": {"reason": res.stop_reason, "detail": res.stop_detail},
        "sampling": {**values, "seed": seed, "source": source},
        "thinking": {"enabled": thinking, "effort": effort, "budget_tokens": budget_tokens,
                     "reply_budget": budget.reply_budget if budget else None,
                     "clamped_by": budget.clamped_by if budget else None,
                     "budget_hit_at": res.thinking_budget_hit_at},
        "limits": {"max_tokens": max_tokens, "max_ctx": max_ctx},
        "timings": {
            "prefill_mode": prefill_mode, "threads": threads,
            "prefill_s": res.prefill_s, "prefill_tok_s": res.prefill_tok_s,
            "decode_s": res.decode_s, "decode_tok_s": res.decode_tok_s,
            "token_s_p50": float(np.percentile(times, 50)) if times.size else None,
            "token_s_p90": float(np.percentile(times, 90)) if times.size else None,
            "token_s_max": float(times.max()) if times.size else None,
        },
        "logprobs": {"k": logprobs, "positions": len(res.logprobs),
                     "min_top2_margin": min(margins) if margins else None},
        "speculation": res.speculation,
        "not_measured": not_measured,
    }


def summary_md(r: dict[str, Any]) -> str:
    t = r["timings"]
    return (f"## Output ({r['output']['n_tokens']} tokens, stop: {r['stop']['reason']})\n\n```\n{r['output']['text']}\n```\n\n"
            f"- prompt tokens: {r['prompt']['n_tokens']}\n- prefill: {rate(t['prefill_tok_s'])} ({t['prefill_mode']})\n"
            f"- decode: {rate(t['decode_tok_s'])}\n- sampling: " +
            ", ".join(f"{k}={v}" for k, v in r["sampling"].items() if k != "source") + "\n"
            + spec_summary_md(r.get("speculation")))


def spec_summary_md(sp: dict[str, Any] | None) -> str:
    if not sp:
        return ""
    acc = sp["acceptance_rate"]
    tpf = sp["tokens_per_forward"]
    fwd = sp.get("decode_forward_s")
    ratio = (sp["verify_s"] / sp["steps"]) / fwd if fwd and sp["steps"] else None
    return (f"- speculation: {sp['drafter']} drafter, width {sp['width']}: {sp['accepted']}/{sp['verified']} candidates "
            f"accepted ({'n/a' if acc is None else f'{acc:.1%}'}), {tpf:.2f} tokens per target forward over "
            f"{sp['steps']} steps ({sp['plain_steps']} plain)"
            + (f"; a verify cost {ratio:.2f} decode forwards on average" if ratio else "") + "\n")


def write_spec_decisions(path: Path, res: GenerationResult) -> None:
    """One line per speculative step: the width policy's decision and what was accepted."""
    import json

    with open(path, "w", encoding="utf-8") as f:
        for d in res.spec_decisions or []:
            f.write(json.dumps(d) + "\n")
