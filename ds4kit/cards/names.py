"""Card file names from GGUF ``general.name``.

The rule is the one the seed report describes for Lucebox (defect 3):
"DeepSeek V4 Flash Src" -> "deepseek-v4-flash-src". Lower-case, every run of
characters other than ASCII letters and digits becomes one '-', and leading or
trailing '-' are stripped.
"""
from __future__ import annotations

import re

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def normalise_name(name: str) -> str:
    if not isinstance(name, str):
        raise ValueError(f"general.name must be a string, got {type(name).__name__}")
    return _NON_ALNUM.sub("-", name.lower()).strip("-")
