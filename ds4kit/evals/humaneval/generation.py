"""Generation: one reply per problem through the target, appended to samples.jsonl as it ends.

A line per finished task (fsynced), so a kill at any moment loses only the task in flight and
--resume continues after the last complete line. Each line is evalplus's samples format
(task_id, solution) plus what the generation did (tokens, stop, truncation, thinking budget).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ds4kit.engine.generate import GenerationConfig
from ds4kit.evals.humaneval.prompts import extract_solution, render, reply_part
from ds4kit.reports.items import ItemLog

TRUNCATING_STOPS = ("max_tokens", "context")


@dataclass(frozen=True)
class Budgets:
    max_tokens: int               # new tokens per task
    thinking_tokens: int | None   # thinking budget (None: thinking off)
    derivation: dict[str, Any]    # how they were derived from the card, for the report


def derive_budgets(card: dict[str, Any], *, thinking: bool, effort: str | None, budget: int | None) -> Budgets:
    """Token budgets from the model card.

    Without thinking: --budget, else the card's max_tokens. Thinking with an effort: the card's
    tier for it plus hard_limit_reply_budget for the visible reply (so the tier is usable in
    full), unless --budget says otherwise; the thinking budget is derive_thinking_budget's.
    Thinking without an effort: the card's max_tokens, thinking until the reply budget is left."""
    from ds4kit.cards.budget import derive_thinking_budget

    reply = int(card.get("hard_limit_reply_budget", 0))
    tiers = card.get("reasoning_effort_tiers") or {}
    if budget is not None:
        max_tokens, source = budget, "--budget"
    elif thinking and effort in tiers:
        max_tokens, source = int(tiers[effort]) + reply, f"card tier {effort!r} + hard_limit_reply_budget"
    else:
        max_tokens, source = int(card["max_tokens"]), "card max_tokens"
    derivation: dict[str, Any] = {"max_tokens": max_tokens, "max_tokens_source": source,
                                  "hard_limit_reply_budget": reply}
    if not thinking:
        return Budgets(max_tokens, None, derivation)
    if effort is None:
        think = max(0, max_tokens - reply)
        derivation.update(thinking_tokens=think, thinking_source="max_tokens - hard_limit_reply_budget")
        if think == 0:
            derivation["warning"] = (f"THINKING BUDGET IS 0: thinking was asked for but max_tokens {max_tokens} - "
                                     f"hard_limit_reply_budget {reply} leaves nothing, so the model answers "
                                     "WITHOUT reasoning; raise --budget or give --effort")
        return Budgets(max_tokens, think, derivation)
    b = derive_thinking_budget(card, max_tokens=max_tokens, reasoning_effort=effort, announce=False)
    derivation.update(thinking_tokens=b.tokens, thinking_source=f"derive_thinking_budget (tier {effort!r})",
                      clamped_by=b.clamped_by, warning=b.warning)
    return Budgets(max_tokens, b.tokens, derivation)


def generate_all(target: Any, problems: dict[str, dict[str, Any]], log: ItemLog, *, budgets: Budgets,
                 thinking: bool, effort: str | None, sampling: dict[str, Any], seed: int,
                 should_stop: Callable[[], bool], progress: Callable[[str], None]) -> bool:
    """Generate every task not yet in `log`; False when stopped before the end."""
    from ds4kit.chat.markers import EOS, THINK_CLOSE

    done = log.done_keys()
    eos, think_end = target.token_id(EOS), target.token_id(THINK_CLOSE)
    for task_id, problem in problems.items():
        if task_id in done:
            continue
        if should_stop():
            return False
        prompt_text = render(target, problem["prompt"], thinking=thinking, effort=effort)
        prompt_ids = target.tokenize(prompt_text, parse_special=True)
        cfg = GenerationConfig(max_tokens=budgets.max_tokens, seed=seed, stop_token_ids=(eos,),
                               thinking_budget=budgets.thinking_tokens,
                               think_end_id=think_end if thinking else None, **sampling)
        res = target.generate(prompt_ids, cfg, max_ctx=len(prompt_ids) + budgets.max_tokens + 1,
                              should_stop=should_stop)
        if res.stop_reason == "interrupted":
            return False  # the task in flight is not kept: --resume generates it again
        reply = reply_part(res.text, thinking=thinking)
        log.append({
            "task_id": task_id,
            "solution": extract_solution(res.text, problem["entry_point"], thinking=thinking),
            "raw_output": res.text,
            "reply": reply,
            "prompt_tokens": len(prompt_ids),
            "output_tokens": len(res.tokens),
            "stop_reason": res.stop_reason,
            "truncated": res.stop_reason in TRUNCATING_STOPS,
            "thinking_budget_hit_at": res.thinking_budget_hit_at,
            "prefill_tok_s": res.prefill_tok_s,
            "decode_tok_s": res.decode_tok_s,
        })
        progress(task_id)
    return True
