"""Which model card applies to a model, and how it was found.

Order (first hit wins):
  1. explicit     ``--card PATH``; a missing or invalid file is an error.
  2. sidecar      beside the model: ``<model-stem>.card.json``, then ``<normalised-name>.json``.
  3. search-path  ``<normalised-name>.json`` in each folder of ``search_path`` (default:
                  ``$DS4KIT_CARD_PATH``, colon separated, then ``~/.config/ds4kit/cards``).
  4. bundled      ``ds4kit/cards/bundled/<normalised-name>.json``.
  5. family       ``ds4kit/cards/bundled/<architecture>.family.json`` (``deepseek4`` ships).
  6. hard-fallback built-in values matching the seed's Lucebox hard fallback (max_tokens 16000,
                  hard_limit_reply_budget 4096, no tiers), with a LOUD warning on stderr and in
                  the resolution, which ``ds4kit.reports.Run.set_card`` copies into every report.

A card file that exists but is invalid is an error wherever it is found: falling
through to a weaker source would hide the mistake, which is how seed defect 3
went unnoticed.
"""
from __future__ import annotations

import copy
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ds4kit.cards.loader import CardError, load_card
from ds4kit.cards.names import normalise_name

SOURCES = ("explicit", "sidecar", "search-path", "bundled", "family", "hard-fallback")
BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"
FAMILY_SUFFIX = ".family.json"
SIDECAR_SUFFIX = ".card.json"
CARD_PATH_ENV = "DS4KIT_CARD_PATH"
USER_CARD_DIR = "~/.config/ds4kit/cards"
_SAFE_ARCH = re.compile(r"^[a-z0-9_-]+$")

HARD_FALLBACK_NAME = "ds4kit hard fallback"
HARD_FALLBACK_CARD: dict[str, Any] = {
    "name": HARD_FALLBACK_NAME,
    "source": "built in; values of Lucebox model_card.cpp's hard fallback as quoted by the seed report (defect 3)",
    "verified_at": "2026-07-29",
    "max_tokens": 16000,
    "complex_problem_max_tokens": 16000,
    "hard_limit_reply_budget": 4096,
    # Neutral sampling (no truncation, no penalties): nothing here is known about the model.
    "sampling": {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0,
                 "presence_penalty": 0.0, "repetition_penalty": 1.0},
    "reasoning_effort_tiers": {},
    "notes": "Used only when no card was found. Reproduces the seed's failure mode on purpose so it is visible: "
             "max_tokens <= 4096 leaves no thinking budget.",
}


@dataclass(frozen=True)
class CardResolution:
    source: str  # one of SOURCES
    name: str  # the card's name
    path: str | None  # the file it came from; None for the hard fallback
    family: str | None  # architecture a family card covers, else None
    card: dict[str, Any]
    warning: str | None
    looked_in: tuple[str, ...] = field(default=())  # files tried before the hit, for the record

    def to_manifest(self) -> dict[str, Any]:
        """The ``manifest.card`` shape of reports/schema/common.json#/$defs/card."""
        return {"source": self.source, "name": self.name, "path": self.path,
                "family": self.family, "warning": self.warning}


def default_search_path(environ: dict[str, str] | None = None) -> list[Path]:
    env = os.environ if environ is None else environ
    dirs = [Path(p).expanduser() for p in env.get(CARD_PATH_ENV, "").split(":") if p]
    return dirs + [Path(USER_CARD_DIR).expanduser()]


def _as_dirs(search_path: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    if isinstance(search_path, (str, os.PathLike)):
        return [Path(p).expanduser() for p in str(search_path).split(":") if p]
    return [Path(p).expanduser() for p in search_path]


def _model_stem(model_path: Path) -> str:
    return model_path.stem if model_path.suffix.lower() == ".gguf" else model_path.name


def _hit(source: str, path: Path, looked_in: list[str], warning: str | None = None) -> CardResolution:
    card = load_card(path)
    return CardResolution(source, card["name"], str(path), card.get("family"), card, warning, tuple(looked_in))


def resolve_card(model_path: str | os.PathLike | None, general_name: str | None, architecture: str | None,
                 card_path: str | os.PathLike | None = None,
                 search_path: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
                 *, announce: bool = True) -> CardResolution:
    """Find the card for a model (order in the module docstring).

    ``search_path`` replaces the default folders when given (a list or a
    colon-separated string). With ``announce`` the hard-fallback warning is
    also printed to stderr. Raises CardError for an explicit card that is
    missing or invalid, and for any invalid card file it meets on the way.
    """
    if card_path is not None:
        return _hit("explicit", Path(card_path), [])

    norm = normalise_name(general_name) if general_name else ""
    looked_in: list[str] = []

    def candidates() -> Iterable[tuple[str, Path]]:
        if model_path is not None:
            model = Path(model_path)
            yield "sidecar", model.parent / (_model_stem(model) + SIDECAR_SUFFIX)
            if norm:
                yield "sidecar", model.parent / f"{norm}.json"
        if norm:
            dirs = default_search_path() if search_path is None else _as_dirs(search_path)
            for d in dirs:
                yield "search-path", d / f"{norm}.json"
            yield "bundled", BUNDLED_DIR / f"{norm}.json"

    for source, path in candidates():
        if path.is_file():
            return _hit(source, path, looked_in)
        looked_in.append(str(path))

    if architecture and _SAFE_ARCH.match(architecture):
        family_path = BUNDLED_DIR / f"{architecture}{FAMILY_SUFFIX}"
        if family_path.is_file():
            note = (f"no model card for general.name {general_name!r}; using the bundled {architecture!r} family "
                    f"card ({family_path.name}), whose values were authored for DeepSeek V4 Flash, not vendor figures")
            res = _hit("family", family_path, looked_in, note)
            if res.family != architecture:
                raise CardError(f"bundled family card {family_path} declares family {res.family!r}, "
                                f"expected {architecture!r}")
            return res
        looked_in.append(str(family_path))

    warning = (
        f"MODEL CARD HARD FALLBACK: no card for general.name {general_name!r} "
        f"(normalised {norm!r}) and no family card for architecture {architecture!r}. "
        f"Using built-in max_tokens {HARD_FALLBACK_CARD['max_tokens']}, hard_limit_reply_budget "
        f"{HARD_FALLBACK_CARD['hard_limit_reply_budget']} and NO reasoning tiers: any max_tokens <= "
        f"{HARD_FALLBACK_CARD['hard_limit_reply_budget']} leaves 0 thinking tokens (seed defect 3). "
        f"Pass --card PATH or put <model-stem>{SIDECAR_SUFFIX} beside the model. "
        f"Looked in: {', '.join(looked_in) or 'nothing (no model path, name or architecture)'}"
    )
    if announce:
        print(f"ds4kit WARNING [model-card]: {warning}", file=sys.stderr)
    return CardResolution("hard-fallback", HARD_FALLBACK_NAME, None, None, copy.deepcopy(HARD_FALLBACK_CARD),
                          warning, tuple(looked_in))
