"""One arm of the prefix-cache probe: every conversation of a suite through the conversation
runner, with one prefix cache shared by all of them (arm "on") or none (arm "off": every turn
prefilled cold), and per turn what the cache should have reused (ds4kit.probes.prefix_cache.reuse)."""
from __future__ import annotations

from typing import Any, Callable

from ds4kit.chat.markers import THINK_OPEN, USER
from ds4kit.probes.prefix_cache.reuse import Stream, ideal_reuse, reachable_reuse


def run_arm(target: Any, suite: Any, gen: Any, *, arm: str, max_ctx: int, thinking: bool, cache: Any,
            on_turn: Callable[[str], None], on_token: Callable[[], None],
            should_stop: Callable[[], bool]) -> list[dict[str, Any]]:
    """Rows, one per generated turn, in order; stops early (keeping what finished) on a stop request."""
    user_id, think_id = target.token_id(USER), target.token_id(THINK_OPEN)
    streams: list[Stream] = []
    rows: list[dict[str, Any]] = []
    for conv in suite.conversations:
        if should_stop():
            break
        last = [0]

        def each(turn: int, ev: Any, conv_id: str = conv.id) -> None:
            if turn != last[0]:    # the runner has no turn-start hook: the first token announces it
                last[0] = turn
                on_turn(f"{arm}: {conv_id} turn {turn + 1}")
            on_token()

        on_turn(f"{arm}: {conv.id} turn 1")
        turns = target.converse(conv.messages, gen, max_ctx=max_ctx, thinking=thinking, effort=None, cache=cache,
                                on_token=each, should_stop=should_stop)
        for k, t in enumerate(turns):
            r = t.result
            expected = ideal_reuse(t.prompt_ids, streams)
            reachable = reachable_reuse(t.prompt_ids, streams, user_id, think_id)
            rows.append({
                "id": f"{conv.id}/{k + 1}", "conversation": conv.id, "turn": k + 1, "message_index": t.index,
                "prompt_tokens": len(t.prompt_ids), "expected_reuse": expected, "reachable_reuse": reachable,
                "actual_reuse": t.actual_reuse, "reuse_tier": t.reuse_tier,
                "restore_s": t.restore_s, "prefill_s": t.prefill_s, "prefilled_tokens": len(t.prompt_ids) - t.actual_reuse,
                "decode_s": r.decode_s, "output_tokens": len(r.tokens), "stop": r.stop_reason, "ids": list(r.tokens),
                "text": r.text, "snapshots_at": list(t.snapshots_taken), "interrupted": r.stop_reason == "interrupted",
            })
            fed = cache is not None and len(t.prompt_ids) + len(r.tokens) <= max_ctx
            streams.append(Stream(list(t.prompt_ids), list(r.tokens), thinking, fed))
        if turns and turns[-1].result.stop_reason == "interrupted":
            break
    return rows
