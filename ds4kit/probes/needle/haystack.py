"""Needle-in-a-haystack prompts with the needle at a sentence boundary, placed and measured in tokens.

The haystack is the shipped text's sentences, each with the whitespace before it, taken from the
start until the rendered prompt would pass the requested length. Per sentence its token count
(tokenised alone: the tokenizer splits before a space-led word, so counts add up) gives the token
position of every boundary; the needle goes at the boundary nearest `depth` percent of the
haystack's tokens, among the boundaries inside a paragraph (before a space-led sentence, where no
tokenizer merges across: a paragraph break after a full stop may become one token with it). The
position reported is then measured on the real tokenisation of the whole prompt (the tokens of
everything before the needle), and checked: the prompt's ids at that position are the needle's own
ids.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ds4kit.resources import probes_dir


@dataclass
class NeedleSpec:
    id: str
    text: str            # a file in probes/texts
    instruction: str
    needle: str
    question: str
    answer: str


@dataclass
class CellPrompt:
    ids: list[int]
    needle_position: int          # index in ids of the needle's first token
    needle_tokens: int
    question_position: int        # index in ids where the question (after the haystack) begins
    haystack_start: int           # index in ids of the haystack's first token
    haystack_tokens: int          # the haystack's tokens, needle excluded
    depth_actual: float           # percent of the haystack before the needle


def sentences(text: str) -> list[str]:
    """The text's sentences, each with the whitespace before it (the first given a space)."""
    out = re.findall(r"\s*[^.]+\.", text)
    if not out:
        raise ValueError("the haystack text has no sentences")
    return [out[0] if out[0][:1].isspace() else " " + out[0]] + out[1:]


def load_text(name: str) -> str:
    path = probes_dir() / "texts" / name
    if not path.is_file():
        raise ValueError(f"no shipped text {name!r} (looked for {path})")
    return path.read_text(encoding="utf-8")


def _render(target: Any, spec: NeedleSpec, body: str) -> str:
    return target.render_chat([{"role": "user", "content": spec.instruction + body + spec.question}])


def _boundary_positions(target: Any, spec: NeedleSpec, sents: list[str], k: int, usable: list[int]):
    """({sentence index: token index of the boundary before it}, haystack start, haystack tokens) in the
    real tokenisation of the needle-free prompt: each token's bytes give its offset in the text."""
    rendered = _render(target, spec, "".join(sents[:k]))
    ids = target.tokenize(rendered)
    offsets, at = {}, 0
    for i, t in enumerate(ids):
        offsets[at] = i
        at += len(bytes(target.model.tokenizer.decode([int(t)])))
    offsets[at] = len(ids)
    base = rendered.index(spec.instruction) + len(spec.instruction)

    def byte_at(chars: int) -> int:   # byte offset in the rendered prompt of a character offset in the haystack
        return len(rendered[:base + chars].encode("utf-8"))

    cum = [0]
    for x in sents[:k]:
        cum.append(cum[-1] + len(x))
    positions = {i: offsets[byte_at(cum[i])] for i in usable if byte_at(cum[i]) in offsets}
    start, end = offsets.get(byte_at(0)), offsets.get(byte_at(cum[k]))
    if start is None or end is None or not positions:
        raise ValueError("the needle-free prompt's tokens do not line up with its text")
    return positions, start, end - start


def build_cell(target: Any, spec: NeedleSpec, sents: list[str], counts: list[int], length: int,
               depth: float) -> CellPrompt:
    """The prompt of one cell: at most `length` tokens, the needle at the sentence boundary nearest
    `depth` percent of the haystack."""
    needle = " " + spec.needle
    overhead = len(target.tokenize(_render(target, spec, needle)))
    k, total = 0, 0
    while k < len(sents) and overhead + total + counts[k] <= length:
        total += counts[k]
        k += 1
    if k == 0:
        raise ValueError(f"length {length} leaves no room for a haystack (the rest of the prompt is {overhead} tokens)")
    if k == len(sents) and overhead + total < length * 0.9:
        raise ValueError(f"the shipped text has only {total} tokens, too few for length {length}")
    usable = [0, k] + [i for i in range(1, k) if sents[i].startswith(" ")]
    positions, hay_start, hay_tokens = _boundary_positions(target, spec, sents, k, usable)
    goal = depth / 100.0 * hay_tokens
    j = min(positions, key=lambda i: (abs(positions[i] - hay_start - goal), i))
    before, after = "".join(sents[:j]), "".join(sents[j:k])
    rendered = _render(target, spec, before + needle + after)
    ids = target.tokenize(rendered)
    at = rendered.index(spec.instruction + before + needle) + len(spec.instruction + before)
    pos = len(target.tokenize(rendered[:at]))
    nid = target.tokenize(needle, parse_special=False)
    if ids[pos:pos + len(nid)] != nid:
        raise ValueError(f"cell length {length} depth {depth}: the needle's tokens are not at position {pos} "
                         "of the prompt (the tokenizer merged across the sentence boundary)")
    # The question starts at the last token boundary at or before its first character (a merge across
    # the boundary moves it back a token or so: the restored arm then prefills that token too).
    q_at = rendered.rindex(spec.question)
    head = target.tokenize(rendered[:q_at])
    q = next((i for i, (a, b) in enumerate(zip(ids, head)) if a != b), min(len(ids), len(head)))
    start = len(target.tokenize(rendered[:rendered.index(spec.instruction) + len(spec.instruction)]))
    hay = q - start - len(nid)
    return CellPrompt(ids, pos, len(nid), q, start, hay, 100.0 * (pos - start) / hay if hay else 0.0)
