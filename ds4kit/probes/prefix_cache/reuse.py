"""What a turn should reuse, computed by the probe from the token streams alone (never from the
cache's own bookkeeping).

- ideal reuse (`expected_reuse`): the longest common prefix of the turn's rendered prompt with any
  token stream the engine processed earlier in the run (earlier prompts with their generated
  tokens): what an ideal cache, holding the state after every token, would restore.
- reachable reuse: the same, limited to the states the cache's design holds (the documented
  rule, ds4kit.engine.conversation / prefix_cache): a snapshot just after each `<｜User｜>` of a
  prompt, before a thinking prompt's final `<think>`, at the end of each prompt and of each
  generation (both with logits), any of which may be restored and rewound by up to
  REWIND_REACH positions. It falls short of the ideal only where a prompt leaves an earlier
  stream inside a message's text, farther than the rewind reach past the nearest snapshot (an
  edited word early in a long message, follow-ups that share their first words): holding those
  would take a snapshot at every token.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ds4kit.engine.native import engine_module

# Ds4Session::kMaxRewind: positions a session can take back after a restore. A design constant
# of the engine, not the cache's bookkeeping, so reading it keeps the probe independent.
REWIND_REACH = engine_module().MAX_REWIND


@dataclass
class Stream:
    """One token stream the engine processed: a prompt and what was generated after it."""
    prompt: list[int]
    generated: list[int]
    thinking: bool = False
    generation_fed: bool = True   # every generated token went through the engine (the cache arm feeds the last)

    @property
    def tokens(self) -> list[int]:
        return self.prompt + self.generated


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def ideal_reuse(prompt: Sequence[int], streams: Sequence[Stream]) -> int:
    return max((common_prefix(prompt, s.tokens) for s in streams), default=0)


def snapshot_points(s: Stream, user_id: int, think_open_id: int) -> list[tuple[int, bool]]:
    """(position, logits kept) of every state the cache's design holds for stream `s`."""
    p = s.prompt
    points = [(i + 1, False) for i, t in enumerate(p) if t == user_id and i + 1 < len(p)]
    if s.thinking and p and p[-1] == think_open_id:
        points.append((len(p) - 1, False))
    points.append((len(p), True))
    if s.generated and s.generation_fed:
        points.append((len(p) + len(s.generated), True))
    return points


def reachable_reuse(prompt: Sequence[int], streams: Sequence[Stream], user_id: int, think_open_id: int) -> int:
    """The most a cache built to the documented rule can restore for `prompt` (module docstring).
    A restore must leave the prompt's last token to feed unless a state there kept its logits."""
    n, best = len(prompt), 0
    for s in streams:
        c = common_prefix(prompt, s.tokens)
        for q, logits in snapshot_points(s, user_id, think_open_id):
            if q <= c and (q < n or logits):
                r = q                                    # restored as it is
            else:
                r = min(c, n - 1)                         # restored, then rewound to where the prompt leaves it
                if q - r > min(REWIND_REACH, q):
                    continue
            best = max(best, r)
    return best
