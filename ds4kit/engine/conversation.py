"""Multi-turn conversations on the engine, with or without a prefix cache: the runner that
`generate --messages`, the prefix-cache probe, needle and the evals share.

    turns = run_conversation(model, messages, GenerationConfig(...), session_options={"max_ctx": 8192},
                             cache=PrefixCache(model, {"max_ctx": 8192}))

A conversation is a list of OpenAI-style messages. After each user message the assistant's
reply is generated, unless the list gives it as the next message. Each generated turn renders
the conversation so far with the chat template, restores the longest cached prefix, prefills
the rest in pieces that end exactly at the turn boundaries (just after each `<｜User｜>`, where a
user message begins, and in thinking mode the point where the reasoning begins, since the next
turn's rendering drops the reasoning) and snapshots each boundary and the end of the prompt
(with its logits: the same prompt again needs no prefill), generates, feeds the last generated
token (generation stops without feeding it) and snapshots the end of the generation. Per turn it
records the prompt, the expected reuse (the longest common prefix of the rendered prompt with
any token stream processed earlier in the run, prompts and generated tokens alike: what an ideal
cache would reuse), the actual reuse, restore and suffix-prefill times, and the reply.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ds4kit.chat.markers import THINK_CLOSE, THINK_OPEN, USER
from ds4kit.engine.generate import GenerationConfig, GenerationResult, TokenEvent, generate


@dataclass
class TurnResult:
    index: int                       # the user message this turn answers (index in messages)
    prompt_ids: list[int]
    expected_reuse: int
    actual_reuse: int
    reuse_tier: str | None
    restore_s: float
    prefill_s: float                 # the suffix prefill, boundary pieces included
    result: GenerationResult
    snapshots_taken: list[int] = field(default_factory=list)   # positions

    @property
    def reply(self) -> str:
        return self.result.text


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def turn_boundaries(model: Any, ids: Sequence[int], thinking: bool) -> list[int]:
    """Positions where a snapshot serves a later turn: just after every `<｜User｜>` (an edited or
    different user message diverges at its first token, after the marker), and in thinking mode
    before the generation prompt's final `<think>` (where the next rendering diverges)."""
    user = model.token_id(USER)
    cuts = [i + 1 for i, t in enumerate(ids) if t == user and i + 1 < len(ids)]
    if thinking and ids and ids[-1] == model.token_id(THINK_OPEN):
        cuts.append(len(ids) - 1)
    return cuts


def turns_to_generate(messages: Sequence[dict[str, Any]]) -> list[int]:
    """Indices of the user messages the assistant must answer (no reply follows in the list)."""
    out = []
    for i, m in enumerate(messages):
        if m.get("role") != "user":
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        if nxt is None or nxt.get("role") != "assistant":
            out.append(i)
    return out


def run_conversation(model: Any, messages: Sequence[dict[str, Any]], cfg: GenerationConfig, *,
                     session_options: dict[str, Any], cache: Any = None, thinking: bool = False,
                     effort: str | None = None,
                     on_token: Callable[[int, TokenEvent], None] | None = None,
                     should_stop: Callable[[], bool] | None = None, speculation: Any = None) -> list[TurnResult]:
    """Generate every missing assistant reply in order (see the module docstring). on_token gets
    (turn number, event). Stops early (returning the turns done) once should_stop() is true.
    speculation: generate each reply speculatively (session_options must capture its layers)."""
    history: list[dict[str, Any]] = []
    seen: list[list[int]] = []          # every token stream processed so far
    turns: list[TurnResult] = []
    todo = set(turns_to_generate(messages))
    for i, m in enumerate(messages):
        history.append(dict(m))
        if i not in todo:
            continue
        if should_stop and should_stop():
            break
        ids = model.encode(model.render_chat(history, thinking=thinking, effort=effort))
        expected = max((common_prefix(ids, s) for s in seen), default=0)
        session = model.session(**session_options)
        fed, tier, restore_s, first_logits = 0, None, 0.0, None
        if cache is not None:
            hit = cache.restore_longest(session, ids)
            fed, tier, restore_s, first_logits = hit.reused, hit.tier, hit.restore_s, hit.logits
        t0 = time.perf_counter()
        taken: list[int] = []
        if cache is not None and first_logits is None:
            first_logits = _prefill_with_snapshots(session, ids, turn_boundaries(model, ids, thinking), cfg,
                                                   cache, taken, should_stop)
        boundary_s = time.perf_counter() - t0
        turn_no = len(turns)
        res = generate(session, model.tokenizer, ids, cfg, should_stop=should_stop,
                       on_token=(lambda ev: on_token(turn_no, ev)) if on_token else None,
                       fed=session.pos, first_logits=first_logits if session.pos == len(ids) else None,
                       speculation=speculation)
        if cache is not None and res.tokens:
            _snapshot_generation_end(session, ids, res.tokens, cache, taken)
        seen.append(ids + res.tokens)
        turns.append(TurnResult(i, ids, expected, fed, tier, restore_s, boundary_s + res.prefill_s, res, taken))
        if res.stop_reason == "interrupted":
            break
        history.append(assistant_message(res.text, thinking))
    return turns


def _prefill_with_snapshots(session: Any, ids: Sequence[int], cuts: Sequence[int], cfg: GenerationConfig,
                            cache: Any, taken: list[int], should_stop: Callable[[], bool] | None):
    """Prefill ids[session.pos:] in pieces ending at each cut and at the end, snapshotting each
    end; the logits after the whole prompt (None when stopped part-way, or when nothing was left)."""
    logits = None
    for cut in [c for c in cuts if c > session.pos] + [len(ids)]:
        if cut <= session.pos:
            continue
        logits = session.prefill(ids[session.pos:cut], cfg.prefill_mode, should_stop=should_stop)
        if logits is None:          # stopped between two blocks: generate() reports the interruption
            return None
        last = logits if cut == len(ids) else None
        cache.put(session.snapshot(last_logits=last), rewind_reach=session.max_rewind)
        taken.append(cut)
    return logits if session.pos == len(ids) else None


def _snapshot_generation_end(session: Any, ids: Sequence[int], out: Sequence[int], cache: Any,
                             taken: list[int]) -> None:
    """Snapshot prompt + every generated token. Generation stops without feeding its last token,
    which the next turn's rendering usually repeats (a reply's final token, or the EOS that
    ends it), so it is fed here, one decode step."""
    logits = None
    if session.pos == len(ids) + len(out) - 1 and session.pos < session.max_ctx:
        logits = session.decode(out[-1])
    if session.pos == len(ids) + len(out):
        cache.put(session.snapshot(last_logits=logits), rewind_reach=session.max_rewind)
        taken.append(session.pos)


def assistant_message(text: str, thinking: bool) -> dict[str, Any]:
    """The reply as the next turn's history holds it: in thinking mode the reasoning (up to
    `</think>`) is its own field, which the template drops for earlier turns."""
    if thinking and THINK_CLOSE in text:
        reasoning, content = text.split(THINK_CLOSE, 1)
        return {"role": "assistant", "content": content, "reasoning_content": reasoning}
    return {"role": "assistant", "content": text}
