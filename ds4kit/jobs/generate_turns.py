"""`generate --messages F [--cache [--cache-dir D]]` with several replies to write: the
conversation runner on the target, each turn's reuse, and what the report says of them.

A conversation file is a JSON list of OpenAI-style messages: after each user message the
assistant's reply is generated, unless the file gives it as the next message. With --cache,
each turn restores the longest cached prefix of its rendered prompt and prefills only the rest
(ds4kit.engine.prefix_cache, ds4kit.engine.conversation)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from ds4kit.chat.markers import BOS, EOS, THINK_CLOSE, THINK_OPEN, USER

CACHE_MARKERS = (BOS, EOS, USER, THINK_OPEN, THINK_CLOSE)


def cache_problem(target: Any) -> str | None:
    """Why the prefix cache cannot run on this target, or None: the DeepSeek markers it splits
    turns at must each be one token of this tokenizer (an unknown template disables it instead
    of guessing)."""
    if not target.capabilities.snapshot:
        return f"the {target.kind} target cannot take snapshots"
    missing = []
    for marker in CACHE_MARKERS:
        try:
            target.token_id(marker)
        except Exception:  # the tokenizer's ArgumentError names the text
            missing.append(marker)
    if missing:
        return "the tokenizer has no single token for " + ", ".join(repr(m) for m in missing)
    return None


def run_turns(target: Any, messages: list[dict[str, Any]], gen: Any, config: Any, *, cache: Any,
              on_token: Callable[[Any], None], should_stop: Callable[[], bool], say: Callable[[str], None]):
    """(the turns, the report's `turns` list)."""
    last = [-1]

    def each(turn: int, ev: Any) -> None:
        if turn != last[0]:
            last[0] = turn
            say(f"turn {turn + 1}")
        on_token(ev)

    turns = target.converse(messages, gen, max_ctx=config.max_ctx, thinking=config.thinking_enabled,
                            effort=config.effort, cache=cache, on_token=each, should_stop=should_stop)
    rows = []
    for k, t in enumerate(turns):
        r = t.result
        rows.append({
            "turn": k, "message_index": t.index, "prompt_tokens": len(t.prompt_ids),
            "expected_reuse": t.expected_reuse, "actual_reuse": t.actual_reuse, "reuse_tier": t.reuse_tier,
            "restore_s": t.restore_s, "prefill_s": t.prefill_s, "prefilled_tokens": len(t.prompt_ids) - t.actual_reuse,
            "decode_s": r.decode_s, "output_tokens": len(r.tokens), "stop": r.stop_reason, "text": r.text,
            "ids": r.tokens, "snapshots_at": t.snapshots_taken,
        })
        say(f"turn {k + 1}: {len(t.prompt_ids)} prompt tokens, reused {t.actual_reuse} of {t.expected_reuse} "
            f"expected, prefilled {len(t.prompt_ids) - t.actual_reuse} in {t.prefill_s:.3f} s")
    return turns, rows


def write_turns(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def turns_summary(rows: list[dict[str, Any]]) -> str:
    lines = ["## Turns", "", "| turn | prompt tokens | expected reuse | actual reuse | prefill s | output tokens | stop |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['turn'] + 1} | {r['prompt_tokens']} | {r['expected_reuse']} | {r['actual_reuse']} | "
                     f"{r['prefill_s']:.3f} | {r['output_tokens']} | {r['stop']} |")
    return "\n".join(lines) + "\n"
