"""What every sensor is: a named source of readings that may be unavailable, and says why.

A reading is a flat dict ``{metric_key: value}``; the key's suffix carries the unit
(``_c`` degrees Celsius, ``_w`` watts, ``_mhz`` clock, ``_pct`` utilisation or load), so the
JSONL, CSV and plots need no side table. Throttle state, where a sensor has one, is a
small dict per sensor that the throttle detector reads.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

UNIT_SUFFIXES = {"_c": "temperature", "_w": "power", "_mhz": "clock", "_pct": "utilisation"}


def metric_kind(key: str) -> str:
    for suffix, kind in UNIT_SUFFIXES.items():
        if key.endswith(suffix):
            return kind
    return "other"


def metric_unit(key: str) -> str:
    return {"temperature": "C", "power": "W", "clock": "MHz", "utilisation": "%"}.get(metric_kind(key), "")


def slug(text: str) -> str:
    """A metric-key-safe lower-case name ('Package id 0' -> 'package_id_0')."""
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_") or "x"


@dataclass
class Unavailable:
    name: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "reason": self.reason}


@dataclass
class Reading:
    values: dict[str, float] = field(default_factory=dict)
    throttle: dict[str, Any] | None = None


class Sensor:
    """Base class. Subclasses set name/source/device and implement ``read``."""

    name: str = "sensor"
    source: str = "unknown"
    device: str = ""
    description: str = ""

    def __init__(self) -> None:
        # Read errors seen while sampling, first message per item, so the report can
        # say that e.g. power1_average went unreadable halfway through.
        self.read_errors: dict[str, str] = {}
        self.read_error_count = 0
        # (clock metric, load metric) pairs for clock-drop throttle detection.
        self.clock_load_pairs: list[tuple[str, str]] = []

    def read(self) -> Reading:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def note_error(self, item: str, exc: BaseException | str) -> None:
        self.read_error_count += 1
        self.read_errors.setdefault(item, exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}")

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "device": self.device, "description": self.description}
