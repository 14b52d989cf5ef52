"""One needle cell, both arms: cold (the whole prompt prefilled in a fresh session, a snapshot of
the haystack put in a prefix cache on the way, at the question's first token) and restored (a
fresh session restored from that cache: only the question is prefilled). Greedy, so the two
answers must agree token for token."""
from __future__ import annotations

import time
from typing import Any

from ds4kit.engine.generate import generate
from ds4kit.probes.needle.scoring import score


def _arm(res: Any, prefill_s: float, prefilled: int, literal: str, **extra: Any) -> dict[str, Any]:
    n = len(res.tokens)
    return {"answer": res.text, "ids": list(res.tokens), "stop": res.stop_reason, **score(res.text, literal),
            "prefill_tokens": prefilled, "prefill_s": prefill_s,
            "prefill_tok_s": prefilled / prefill_s if prefill_s > 0 and prefilled else None,
            "decode_tokens": n, "decode_s": res.decode_s,
            "decode_tok_s": n / res.decode_s if res.decode_s > 0 and n else None, **extra}


def run_cell(target: Any, prompt: Any, gen: Any, *, max_ctx: int, literal: str, restored: bool,
             should_stop: Any) -> dict[str, Any] | None:
    """The arms' results, or None when stopped part-way (the cell is then not finished)."""
    model = target.model
    ids, q = prompt.ids, prompt.question_position
    s = target.session(max_ctx)
    t0 = time.perf_counter()
    if s.prefill(ids[:q], gen.prefill_mode, should_stop=should_stop) is None:
        return None
    hay_s = time.perf_counter() - t0
    cache = None
    if restored:
        cache = target.prefix_cache(max_ctx, max_bytes=1 << 40)
        cache.put(s.snapshot())
    cold = generate(s, model.tokenizer, ids, gen, fed=q, should_stop=should_stop)
    if cold.stop_reason == "interrupted":
        return None
    arms = {"cold": _arm(cold, hay_s + cold.prefill_s, len(ids), literal)}
    if restored:
        s2 = target.session(max_ctx)
        hit = cache.restore_longest(s2, ids)
        warm = generate(s2, model.tokenizer, ids, gen, fed=hit.reused, should_stop=should_stop)
        if warm.stop_reason == "interrupted":
            return None
        arms["restored"] = _arm(warm, warm.prefill_s, len(ids) - hit.reused, literal, reused=hit.reused,
                                restore_s=hit.restore_s)
    return arms
