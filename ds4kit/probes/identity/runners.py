"""How an arm's tokens are produced, per kind of target.

`EngineArmRunner` runs our engine: plain decoding, or the C++ speculative loop with the DSpark
or the scripted drafter. `SessionArmRunner` drives any session with prefill / decode / verify /
rewind (llama.cpp in process, or our own session for the tests) through a greedy loop in
Python: the scripted drafter's candidates verified in one batch per step. Both return the
tokens, with `logprobs` the top-k log-probabilities at every index (what a divergence report
shows) and, for speculative arms, which step, verify width and row produced each token.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ds4kit.engine.generate import GenerationConfig, generate, top_logprobs
from ds4kit.engine.speculative import Speculation, error_positions_for_rate
from ds4kit.probes.identity.arms import Arm

DEFAULT_BATCHED_WIDTH = 4  # a scripted arm's width on a target without our width policy


@dataclass
class ArmResult:
    tokens: list[int]
    top: list[list[tuple[int, float]]]     # per index: top-k (id, logprob), best first
    decode_s: float
    prefill_s: float
    speculation: dict[str, Any] | None = None
    trace: list[dict[str, int]] | None = None  # per index: {"step", "width", "row"} (step -1: the prompt's row)
    errors: list[int] = field(default_factory=list)  # the scripted drafter's error positions


def trace_from_decisions(decisions: list[dict[str, Any]]) -> list[dict[str, int]]:
    """Index 0 comes from the prompt's last row; step k then emits its accepted candidates and one
    drawn token, from rows 0 .. accepted of its verify."""
    out = [{"step": -1, "width": 0, "row": 0}]
    for k, d in enumerate(decisions):
        out.extend({"step": k, "width": int(d["verified"]), "row": j} for j in range(int(d["accepted"]) + 1))
    return out


def scripted_errors(arm: Arm, start: int, n: int, item_seed: int) -> list[int]:
    return error_positions_for_rate(start, n, float(arm.acceptance), seed=item_seed)


class EngineArmRunner:
    def __init__(self, target: Any, *, max_ctx: int, top_k: int, eos: int | None):
        self.target, self.max_ctx, self.top_k, self.eos = target, max_ctx, top_k, eos
        self._drafter = None
        self._policy: dict[str, Any] = {}  # arm name -> its width policy, carried from item to item

    def _dspark(self, width: int) -> Speculation:
        if self._drafter is None:
            spec = getattr(self.target, "speculation", None)
            if spec is None:
                raise ValueError("a dspark arm needs --drafter")
            self._drafter = spec
        return Speculation(self._drafter.proposer, width, "dspark", self._drafter.describe_extra)

    def run(self, arm: Arm, prompt: Sequence[int], max_tokens: int, reference: list[int] | None,
            item_seed: int, logprobs: bool = True) -> ArmResult:
        model = self.target.model
        cfg = GenerationConfig(max_tokens=max_tokens, temperature=0.0, logprobs=self.top_k if logprobs else 0,
                               stop_token_ids=(self.eos,) if self.eos is not None else ())
        errors: list[int] = []
        spec = None
        if arm.kind == "dspark":
            spec = self._dspark(arm.width)
        elif arm.kind == "scripted":
            errors = scripted_errors(arm, len(prompt), max_tokens, item_seed)
            spec = Speculation.scripted(reference, len(prompt), errors, model.n_vocab, width=arm.width,
                                        acceptance=arm.acceptance)
        if spec is not None:
            spec.carry = self._policy.get(arm.name)  # what the arm measured on earlier items
        session = model.session(**self.target.session_options(self.max_ctx, speculation=spec))
        res = generate(session, model.tokenizer, list(prompt), cfg, speculation=spec)
        if spec is not None:
            self._policy[arm.name] = spec.carry
        top = [[(int(i), float(v)) for i, v in r["top"]] for r in res.logprobs]
        return ArmResult(res.tokens, top, res.decode_s, res.prefill_s, res.speculation,
                         trace_from_decisions(res.spec_decisions) if res.spec_decisions is not None else None, errors)


class SessionArmRunner:
    """Greedy decoding over a session that verifies in batches (its rows need not equal its decode)."""

    def __init__(self, open_session: Any, *, top_k: int, eos: int | None):
        self.open_session, self.top_k, self.eos = open_session, top_k, eos

    def run(self, arm: Arm, prompt: Sequence[int], max_tokens: int, reference: list[int] | None,
            item_seed: int, logprobs: bool = True) -> ArmResult:
        if arm.kind == "dspark":
            raise ValueError("dspark arms run on the embedded engine only")
        s = self.open_session()
        start = len(prompt)
        t0 = time.perf_counter()
        logits = np.asarray(s.prefill(list(prompt)))
        prefill_s = time.perf_counter() - t0
        n_vocab = int(logits.shape[-1])
        errors = scripted_errors(arm, start, max_tokens, item_seed) if arm.kind == "scripted" else []
        bad = set(errors)
        width = (arm.width or DEFAULT_BATCHED_WIDTH) if arm.kind == "scripted" else 1
        out, top, trace = [], [], []
        stats = {"steps": 0, "verified": 0, "accepted": 0, "verify_s": 0.0, "rewind_s": 0.0}

        def take(tok: int, row: np.ndarray, where: dict[str, int]) -> bool:
            out.append(tok)
            top.append(top_logprobs(row, self.top_k)[1] if self.top_k and logprobs else [])
            trace.append(where)
            return tok == self.eos or len(out) >= max_tokens

        t0 = time.perf_counter()
        done = max_tokens == 0 or take(int(np.argmax(logits)), logits, {"step": -1, "width": 0, "row": 0})
        step = 0
        while not done:
            pending = out[-1]
            pos = start + len(out) - 1  # the pending token's position
            w = max(1, min(width, max_tokens - len(out)))  # a step emits at most w tokens
            cands = []
            for i in range(w - 1):
                p = pos + 1 + i
                k = p - start
                if k >= len(reference):
                    break
                cands.append((reference[k] + 1) % n_vocab if p in bad else reference[k])
            tv = time.perf_counter()
            rows = np.asarray(s.verify([pending] + cands)) if cands else np.asarray(s.decode(pending))[None, :]
            stats["verify_s"] += time.perf_counter() - tv
            stats["steps"] += 1
            stats["verified"] += len(cands)
            k = 0
            while k < len(cands) and int(np.argmax(rows[k])) == cands[k]:
                k += 1
            stats["accepted"] += k
            tr = time.perf_counter()
            if len(cands) - k:
                s.rewind(len(cands) - k)
            stats["rewind_s"] += time.perf_counter() - tr
            emitted = cands[:k] + [int(np.argmax(rows[k]))]
            for j, tok in enumerate(emitted):
                if take(tok, rows[j], {"step": step, "width": len(cands) + 1, "row": j}):
                    done = True
                    break
            step += 1
        decode_s = time.perf_counter() - t0
        spec = None
        if arm.kind == "scripted":
            spec = {**stats, "drafter": "scripted", "width": width, "emitted": len(out),
                    "acceptance_rate": stats["accepted"] / stats["verified"] if stats["verified"] else None,
                    "tokens_per_forward": len(out) / stats["steps"] if stats["steps"] else None,
                    "loop": "python greedy loop over the target's batched verify"}
        return ArmResult(out, top, decode_s, prefill_s, spec, trace if arm.kind == "scripted" else None, errors)
