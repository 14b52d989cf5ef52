"""Put a card resolution and its budgets into a run report (kind "model-card" or any other).

Compute with ``announce=False`` when the result goes into a Run: ``Run.warn``
prints each warning to stderr itself, so nothing is said twice and nothing is
said zero times.

    res = resolve_card(model, name, arch, card_path, announce=False)
    results, budgets = card_results(res, max_tokens=2048, max_ctx=16384)
    with start_run("model-card", out) as run:
        record_card(run, res, budgets)
        run.finish(results)
"""
from __future__ import annotations

from typing import Any, Iterable

from ds4kit.cards.budget import Budget, derive_thinking_budget
from ds4kit.cards.resolve import CardResolution


def record_card(run: Any, resolution: CardResolution, budgets: Iterable[Budget] = ()) -> None:
    """Record the resolution in the manifest (``Run.set_card`` also warns) and each budget's warning."""
    run.set_card(resolution.to_manifest())
    for budget in budgets:
        if budget.warning:
            run.warn("thinking-budget", budget.warning)


def card_results(resolution: CardResolution, *, max_tokens: int | None = None, max_ctx: int | None = None,
                 efforts: Iterable[str | None] | None = None) -> tuple[dict[str, Any], list[Budget]]:
    """Results for a "model-card" report: the card, and the budget of each effort at these limits
    (default: every tier of the card, or "high" when it has none)."""
    card = resolution.card
    max_tokens = card["max_tokens"] if max_tokens is None else max_tokens
    efforts = (tuple(card["reasoning_effort_tiers"]) or ("high",)) if efforts is None else tuple(efforts)
    budgets = [derive_thinking_budget(card, max_tokens=max_tokens, reasoning_effort=e, max_ctx=max_ctx,
                                      announce=False) for e in efforts]
    results = {
        "resolution": resolution.to_manifest(),
        "looked_in": list(resolution.looked_in),
        "card": card,
        "budgets": [{"reasoning_effort": b.tier, "max_tokens": max_tokens, "max_ctx": max_ctx, "tokens": b.tokens,
                     "reply_budget": b.reply_budget, "clamped_by": b.clamped_by, "warning": b.warning}
                    for b in budgets],
    }
    return results, budgets
