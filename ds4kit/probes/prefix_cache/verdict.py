"""The prefix-cache probe's verdict, from the two arms' turns.

Rule: pass iff (1) every answer of the cache-on arm is token for token the cache-off arm's, and
(2) every turn restores exactly its ideal reuse (`actual_reuse == expected_reuse`), except where
the ideal is out of the cache's structural reach (ds4kit.probes.prefix_cache.reuse: the prompt
leaves an earlier stream inside a message's text, beyond the rewind reach of every snapshot):
there the turn must restore exactly the reachable reuse, never less and never more. Each such
turn is listed with its shortfall. With one arm, or an interrupted run, there is no verdict
("incomplete")."""
from __future__ import annotations

from typing import Any

RULE = ("pass iff every cache-on answer has the cache-off answer's token ids, and every turn's actual_reuse "
        "equals its expected_reuse (the longest common prefix with any earlier token stream), except where that "
        "prefix ends inside a message's text beyond the rewind reach (32 positions) of every state the cache holds "
        "(after each <｜User｜>, before a thinking prompt's final <think>, the end of each prompt and of each "
        "generation); there actual_reuse must equal reachable_reuse exactly")


def join_arms(on: list[dict[str, Any]] | None, off: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """One row per turn: the cache-on arm's reuse and timings, the cold time and the comparison."""
    by_id = {r["id"]: r for r in off or []}
    base = on if on is not None else off or []
    rows = []
    for r in base:
        cold = by_id.get(r["id"]) if on is not None else r
        row = {k: r[k] for k in ("id", "conversation", "turn", "message_index", "prompt_tokens", "output_tokens",
                                 "stop")}
        if on is not None:
            row.update({k: r[k] for k in ("expected_reuse", "reachable_reuse", "actual_reuse", "reuse_tier",
                                          "restore_s", "prefilled_tokens", "snapshots_at")})
            row["suffix_prefill_s"] = r["prefill_s"]
            row["ideal"] = r["actual_reuse"] == r["expected_reuse"]
            row["reuse_ok"] = r["actual_reuse"] == r["reachable_reuse"]
            row["shortfall"] = r["expected_reuse"] - r["reachable_reuse"]
        else:
            row.update({"expected_reuse": None, "reachable_reuse": None, "actual_reuse": None, "reuse_ok": None})
        row["cold_prefill_s"] = cold["prefill_s"] if cold else None
        if on is not None and cold and cold["prefill_s"] > 0:
            row["prefill_fraction"] = (r["restore_s"] + r["prefill_s"]) / cold["prefill_s"]
        else:
            row["prefill_fraction"] = None
        if on is not None and cold:
            row["answer_identical"] = r["ids"] == cold["ids"] and r["prompt_tokens"] == cold["prompt_tokens"]
            row["first_difference"] = next((i for i, (a, b) in enumerate(zip(r["ids"], cold["ids"])) if a != b),
                                           None if len(r["ids"]) == len(cold["ids"]) else min(len(r["ids"]), len(cold["ids"])))
        else:
            row["answer_identical"] = None
            row["first_difference"] = None
        row["ids"] = r["ids"]
        row["ids_off"] = cold["ids"] if (on is not None and cold) else None
        row["text"] = r["text"]
        rows.append(row)
    return rows


def verdict(rows: list[dict[str, Any]], *, both_arms: bool, complete: bool) -> dict[str, Any]:
    failures = []
    for r in rows:
        if r["answer_identical"] is False:
            failures.append(f"{r['id']}: answer differs from the cache-off arm at token {r['first_difference']}")
        if r.get("reuse_ok") is False:
            failures.append(f"{r['id']}: restored {r['actual_reuse']} tokens, should be {r['reachable_reuse']} "
                            f"(ideal {r['expected_reuse']})")
    short = [{"id": r["id"], "expected_reuse": r["expected_reuse"], "reachable_reuse": r["reachable_reuse"],
              "reason": "the prompt leaves an earlier stream inside a message's text, beyond the rewind reach of "
                        "every snapshot"}
             for r in rows if r.get("shortfall")]
    if failures:
        v = "fail"
    elif not both_arms or not complete or not rows:
        v = "incomplete"
    else:
        v = "pass"
    return {"verdict": v, "rule": RULE, "failures": failures, "short_of_ideal": short,
            "turns_ideal": sum(1 for r in rows if r.get("ideal")), "turns": len(rows)}
