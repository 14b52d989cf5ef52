"""Exact-literal scoring of a needle answer, and the edit that separates a near miss from the literal.

found: the expected literal occurs in the answer exactly as written (KESTREL-77 answered as
KESTREL-7-7 is a miss). For a miss, the answer's substring closest to the literal (fewest
insertions, deletions and substitutions, anywhere in the answer; the longest such on a tie) and
those edits are shown.
"""
from __future__ import annotations

from typing import Any


def _closest_window(answer: str, literal: str) -> tuple[int, int, int]:
    """(distance, start, end) of the substring of `answer` with the least edit distance to `literal`."""
    m, n = len(literal), len(answer)
    # D[i][j]: edits turning literal[:i] into a substring of answer ending at j (free start: D[0][j] = 0).
    prev = [0] * (n + 1)
    starts = list(range(n + 1))
    for i in range(1, m + 1):
        cur, cur_s = [i] + [0] * n, [0] + [0] * n
        for j in range(1, n + 1):
            options = [(prev[j - 1] + (literal[i - 1] != answer[j - 1]), starts[j - 1]),
                       (prev[j] + 1, starts[j]), (cur[j - 1] + 1, cur_s[j - 1])]
            cur[j], cur_s[j] = min(options)
        prev, starts = cur, cur_s
    # Ties: the longest window (KESTREL-7-7 shows as one inserted '-', not as a missing '7').
    best = min(range(n + 1), key=lambda j: (prev[j], -(j - starts[j]), j))
    return prev[best], starts[best], best


def _edits(got: str, want: str) -> list[str]:
    import difflib

    out = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, want, got, autojunk=False).get_opcodes():
        if op == "replace":
            out.append(f"at {a0}: {want[a0:a1]!r} -> {got[b0:b1]!r}")
        elif op == "delete":
            out.append(f"at {a0}: {want[a0:a1]!r} missing")
        elif op == "insert":
            out.append(f"at {a0}: {got[b0:b1]!r} inserted")
    return out


def score(answer: str, literal: str) -> dict[str, Any]:
    if literal in answer:
        return {"found": True, "closest": literal, "distance": 0, "edits": []}
    if not answer:
        return {"found": False, "closest": "", "distance": len(literal), "edits": [f"at 0: {literal!r} missing"]}
    d, a, b = _closest_window(answer, literal)
    got = answer[a:b]
    return {"found": False, "closest": got, "distance": d, "edits": _edits(got, literal)}
