"""Speculative decoding from Python: which drafter proposes, at which width (the loop itself is
C++, ds4kit._engine.Speculator; engine/src/spec/).

    spec = Speculation.dspark(Drafter.load("draft.gguf", model), width=0)        # 0: the auto policy
    spec = Speculation.scripted(reference, start=len(prompt), error_positions=[...], n_vocab=V)
    session = model.session(max_ctx, **spec.session_options())   # captures the drafter's layers
    result = generate(session, tokenizer, prompt, cfg, speculation=spec)

A scripted drafter proposes a known continuation (e.g. the target-only output) with a wrong
token at each error position, so the acceptance is known before the run: probes and tests use
it to check the loop, the policy and any engine that verifies in batches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ds4kit.engine.native import engine_module

MAX_WIDTH = 8


def check_width(width: int) -> int:
    """0 (auto) or 1..8; ValueError naming the range otherwise."""
    if not isinstance(width, int) or isinstance(width, bool) or not 0 <= width <= MAX_WIDTH:
        raise ValueError(f"speculative width must be 1..{MAX_WIDTH} or auto, got {width!r}")
    return width


def error_positions_for_rate(start: int, length: int, acceptance: float, seed: int = 0) -> list[int]:
    """Positions start .. start+length-1 where a scripted drafter proposes a wrong token: each one
    independently with probability 1 - acceptance (seeded), so a candidate that is tested is
    accepted with probability `acceptance`."""
    if not 0.0 <= acceptance <= 1.0:
        raise ValueError(f"acceptance must be in [0, 1], got {acceptance}")
    rng = np.random.default_rng(seed)
    wrong = rng.random(length) >= acceptance
    return [start + i for i in np.flatnonzero(wrong).tolist()]


@dataclass
class Speculation:
    """A proposer and the width policy: what `generate(..., speculation=)` runs with."""

    proposer: Any                # an _engine.Proposer
    width: int = 0               # 0: the auto policy; 1..8 fixed (capped at 1 + the longest draft)
    kind: str = "dspark"         # "dspark" or "scripted"
    describe_extra: dict[str, Any] | None = None
    # The width policy of the last generation (its measured costs and acceptance), carried into the
    # next one; None: start afresh.
    carry: Any = None

    @classmethod
    def dspark(cls, drafter: Any, width: int = 0) -> "Speculation":
        native = getattr(drafter, "_d", drafter)
        extra = {"path": str(getattr(drafter, "path", "")) or None, "block_size": native.block_size,
                 "capture_layers": list(native.capture_layers), "confidence_head": native.confidence_dim > 0}
        return cls(engine_module().DsparkProposer(native), check_width(width), "dspark", extra)

    @classmethod
    def scripted(cls, reference: Sequence[int], start: int, error_positions: Sequence[int], n_vocab: int,
                 width: int = 0, max_draft: int = MAX_WIDTH - 1, acceptance: float | None = None) -> "Speculation":
        native = engine_module().ScriptedProposer([int(t) for t in reference], int(start),
                                                  [int(p) for p in error_positions], int(n_vocab), int(max_draft))
        extra = {"reference_tokens": len(reference), "start": int(start), "errors": len(error_positions),
                 "acceptance": acceptance}
        return cls(native, check_width(width), "scripted", extra)

    @property
    def max_width(self) -> int:
        return min(MAX_WIDTH, 1 + int(self.proposer.max_draft))

    @property
    def effective_width(self) -> int:
        """The fixed width after the drafter's cap (0: auto)."""
        return min(self.width, self.max_width) if self.width else 0

    def session_options(self) -> dict[str, Any]:
        """What the target session must capture for this proposer (nothing for a scripted one)."""
        layers = list(self.proposer.capture_layers)
        return {"capture_layers": layers, "capture_at": self.proposer.capture_at} if layers else {}

    def describe(self) -> dict[str, Any]:
        out = {"drafter": self.kind, "width": self.width or "auto", "effective_width": self.effective_width or "auto",
               "max_width": self.max_width}
        if self.width and self.effective_width != self.width:
            out["width_capped"] = f"{self.width} capped at {self.max_width} (1 + the drafter's longest draft)"
        out.update(self.describe_extra or {})
        return out

    def start(self, session: Any, params: Any) -> Any:
        """The native loop for one generation, carrying the width policy of the previous one (its
        measured costs and acceptance), so the warmup is paid once per drafter, not per reply."""
        native_session = getattr(session, "_s", session)
        return engine_module().Speculator(native_session, self.proposer, params, self.width, self.carry)

    def finished(self, speculator: Any) -> None:
        self.carry = speculator.policy_state()


def summarize(stats: dict[str, Any], decisions: list[dict[str, Any]], policy: dict[str, Any]) -> dict[str, Any]:
    """The report's `speculation` statistics, each with its denominator."""
    steps = stats["steps"]
    spec_steps = steps - stats["plain_steps"]
    tried, acc = stats["tried_at"], stats["accepted_at"]
    out = dict(stats)
    out.update({
        "spec_steps": spec_steps,
        "acceptance_rate": stats["accepted"] / stats["verified"] if stats["verified"] else None,
        "acceptance_by_position": [a / t if t else None for a, t in zip(acc, tried)],
        "mean_accept_length": stats["accepted"] / spec_steps if spec_steps else None,
        "tokens_per_forward": stats["emitted"] / steps if steps else None,
        "policy": policy,
        "widths": _width_counts(decisions),
        "reasons": _reason_counts(decisions),
    })
    # The policy's own measured width-1 forward (a decode step's forward alone, without the
    # sampling and bookkeeping around it): what a verify costs in decode steps.
    if policy["measured"][0]:
        out["decode_forward_s"] = policy["verify_costs_s"][0]
    return out


def _width_counts(decisions: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for d in decisions:
        counts[str(d["verified"])] = counts.get(str(d["verified"]), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: int(kv[0])))


def _reason_counts(decisions: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for d in decisions:
        counts[d["reason"]] = counts.get(d["reason"], 0) + 1
    return counts
