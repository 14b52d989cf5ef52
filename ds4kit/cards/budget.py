"""Thinking budgets derived from a model card (seed report, defect 3)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from ds4kit.chat.template import REASONING_EFFORTS


_ADVICE = {
    None: "The card's tier for this effort is 0; fix the card",
    "max_tokens": "Raise max_tokens above {reply} or use a card with a smaller hard_limit_reply_budget",
    "max_ctx": "Raise max_ctx above {reply} or use a card with a smaller hard_limit_reply_budget",
}


@dataclass(frozen=True)
class Budget:
    tokens: int  # thinking tokens allowed
    reply_budget: int  # tokens kept back for the visible reply
    tier: str | None  # the reasoning effort asked for; None = thinking off
    clamped_by: str | None  # "max_tokens" or "max_ctx" when a limit cut the tier; None otherwise
    warning: str | None  # loud text when thinking was asked for and the budget is 0


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return value


def derive_thinking_budget(card: dict[str, Any], *, max_tokens: int | None, reasoning_effort: str | None,
                           max_ctx: int | None = None, announce: bool = True) -> Budget:
    """How many tokens the model may think for, given a card and a request.

    Rule:
      reply_budget = card["hard_limit_reply_budget"]
      thinking     = min(tier value for reasoning_effort,       # absent for the hard fallback
                         max_tokens - reply_budget,
                         max_ctx - reply_budget  if max_ctx is given)
      floored at 0.

    ``max_tokens=None`` uses the card's ``max_tokens``. ``reasoning_effort=None``
    means thinking is off: the budget is 0 with no warning. When thinking is
    asked for and the result is 0 (the seed's 2048 - 4096 case), ``warning``
    carries a loud message naming the numbers, and with ``announce`` it is also
    printed to stderr, because a run that silently thinks for 0 tokens is the
    defect this module exists to prevent. An effort the card has no tier for
    raises ValueError listing the valid tiers.
    """
    reply = card["hard_limit_reply_budget"]
    max_tokens = card["max_tokens"] if max_tokens is None else _positive_int(max_tokens, "max_tokens")
    if max_ctx is not None:
        max_ctx = _positive_int(max_ctx, "max_ctx")
    if reasoning_effort is None:
        return Budget(0, reply, None, None, None)

    tiers = card.get("reasoning_effort_tiers") or {}
    valid = list(tiers) if tiers else list(REASONING_EFFORTS)
    if reasoning_effort not in valid:
        raise ValueError(f"reasoning_effort: unknown tier {reasoning_effort!r}; card "
                         f"{card.get('name')!r} has {', '.join(valid)}")

    # (limit name, value, how it was computed) in tie-break order: an unclamped tier wins ties.
    limits: list[tuple[str | None, int, str]] = []
    if reasoning_effort in tiers:
        limits.append((None, tiers[reasoning_effort], f"tier {reasoning_effort!r} = {tiers[reasoning_effort]}"))
    limits.append(("max_tokens", max_tokens - reply,
                   f"max_tokens {max_tokens} - hard_limit_reply_budget {reply} = {max_tokens - reply}"))
    if max_ctx is not None:
        limits.append(("max_ctx", max_ctx - reply,
                       f"max_ctx {max_ctx} - hard_limit_reply_budget {reply} = {max_ctx - reply}"))
    clamped_by, value, how = min(limits, key=lambda lim: lim[1])
    tokens = max(0, value)

    warning = None
    if tokens == 0:
        if reasoning_effort not in tiers:
            tier_text = "the card has no tiers"
        else:
            tier_text = f"tier {tiers[reasoning_effort]}"
        warning = (
            f"THINKING BUDGET IS 0: reasoning_effort {reasoning_effort!r} was asked for ({tier_text}) but "
            f"{how}{' (floored to 0)' if value < 0 else ''}, so the model will answer WITHOUT reasoning "
            f"(seed defect 3). {_ADVICE[clamped_by].format(reply=reply)} (card: {card.get('name')!r})."
        )
        if announce:
            print(f"ds4kit WARNING [thinking-budget]: {warning}", file=sys.stderr)
    return Budget(tokens, reply, reasoning_effort, clamped_by, warning)
