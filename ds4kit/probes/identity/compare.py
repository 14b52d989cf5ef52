"""Arm against reference: identical, or where and how they part."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from ds4kit.probes.identity.runners import ArmResult


def tokens_sha256(items_tokens: Sequence[Sequence[int]]) -> str:
    """sha256 of the JSON list of every item's token ids, in suite order (compact separators)."""
    blob = json.dumps([[int(t) for t in toks] for toks in items_tokens], separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def first_divergence(ref: ArmResult, arm: ArmResult) -> dict[str, Any] | None:
    """None when the token lists are equal; else the first index where they differ (or where one
    ends), both arms' top-k there, the reference's top-2 margin, and the arm's verify step/width/row."""
    n = min(len(ref.tokens), len(arm.tokens))
    i = next((k for k in range(n) if ref.tokens[k] != arm.tokens[k]), None)
    if i is None:
        if len(ref.tokens) == len(arm.tokens):
            return None
        i = n
    def at(r: ArmResult) -> dict[str, Any]:
        top = r.top[i] if i < len(r.top) else []
        return {"token": r.tokens[i] if i < len(r.tokens) else None, "top": [[t, lp] for t, lp in top]}
    ref_top = ref.top[i] if i < len(ref.top) else []
    margin = ref_top[0][1] - ref_top[1][1] if len(ref_top) > 1 else None
    where = arm.trace[i] if arm.trace and i < len(arm.trace) else None
    return {"index": i, "reference": at(ref), "arm": at(arm), "reference_top2_margin": margin,
            "verify": where}
