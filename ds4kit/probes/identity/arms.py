"""The arms of `probe identity`: what generates each item's tokens.

    target-only          plain decoding: the reference every other arm must equal
    dspark-auto          the DSpark drafter (--drafter) with the automatic width policy
    dspark-wN            the DSpark drafter at a fixed verify width N (2..8)
    scripted-aP[-wN]     the scripted drafter at acceptance P percent (its proposals are the
                         target-only tokens, wrong at seeded positions), auto width or N

`--arms` takes a comma list of names and the groups `all`, `dspark`, `scripted`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

TARGET_ONLY = "target-only"
DEFAULT_ACCEPTANCE = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
_SCRIPTED = re.compile(r"^scripted-a(\d{1,3})(?:-w([1-8]))?$")
_DSPARK = re.compile(r"^dspark-(auto|w([1-8]))$")


@dataclass(frozen=True)
class Arm:
    name: str
    kind: str                  # "target", "dspark", "scripted"
    width: int = 0             # 0: auto
    acceptance: float | None = None

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "width": self.width or "auto", "acceptance": self.acceptance}


def parse_arm(name: str) -> Arm:
    name = name.strip()
    if name == TARGET_ONLY:
        return Arm(name, "target")
    m = _DSPARK.match(name)
    if m:
        return Arm(name, "dspark", 0 if m.group(1) == "auto" else int(m.group(2)))
    m = _SCRIPTED.match(name)
    if m and int(m.group(1)) <= 100:
        return Arm(name, "scripted", int(m.group(2) or 0), int(m.group(1)) / 100)
    raise ValueError(f"unknown arm {name!r}: use target-only, dspark-auto, dspark-w2..dspark-w8, "
                     "scripted-aP or scripted-aP-wN (P in 0..100), or the groups all, dspark, scripted")


def dspark_arms() -> list[Arm]:
    return [parse_arm("dspark-auto")] + [parse_arm(f"dspark-w{w}") for w in range(2, 9)]


def scripted_arms(acceptances=DEFAULT_ACCEPTANCE) -> list[Arm]:
    return [parse_arm(f"scripted-a{round(a * 100)}") for a in acceptances]


def select_arms(spec: str, *, have_drafter: bool, acceptances=DEFAULT_ACCEPTANCE) -> tuple[list[Arm], list[str]]:
    """(arms to run, notes on arms left out). target-only always runs first: it is the reference."""
    arms: list[Arm] = [parse_arm(TARGET_ONLY)]
    notes: list[str] = []
    for part in [p.strip() for p in spec.split(",") if p.strip()]:
        if part == "all":
            group = (dspark_arms() if have_drafter else []) + scripted_arms(acceptances)
            if not have_drafter:
                notes.append("dspark arms not run: no --drafter given")
        elif part == "dspark":
            group = dspark_arms()
        elif part == "scripted":
            group = scripted_arms(acceptances)
        else:
            group = [parse_arm(part)]
        for arm in group:
            if arm.kind == "dspark" and not have_drafter:
                raise ValueError(f"arm {arm.name} needs --drafter")
            if arm not in arms:
                arms.append(arm)
    return arms, notes
