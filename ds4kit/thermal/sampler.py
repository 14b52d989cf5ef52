"""Take samples on a fixed grid and append each one to a JSONL file as it is taken.

The grid is ``t0 + k * interval``: a slow sample does not push later ones back (drift
correction); ticks that are already past when a sample finishes are skipped and
counted, never bunched up. Each line is flushed and fsynced, so a crash or kill of
the watcher loses at most the sample being written.
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable

from ds4kit.thermal.sensor_base import Sensor


class Ticker:
    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic):
        if not interval > 0:
            raise ValueError(f"--interval must be positive, got {interval}")
        self.interval = interval
        self.clock = clock
        self.t0 = clock()
        self.k = 0
        self.missed = 0

    def delay(self) -> float:
        """Seconds until the next tick (advancing past ticks that were missed)."""
        self.k += 1
        now = self.clock()
        due = self.t0 + self.k * self.interval
        if now > due:
            skip = math.floor((now - due) / self.interval) + 1
            self.k += skip
            self.missed += skip
            due = self.t0 + self.k * self.interval
        return max(0.0, due - now)


class Sampler:
    def __init__(self, sensors: list[Sensor], jsonl_path: str | os.PathLike, *, t0: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.sensors = sensors
        self.path = Path(jsonl_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self.t0 = clock() if t0 is None else t0
        self.count = 0
        self.last: dict[str, Any] | None = None
        self._f = open(self.path, "a", encoding="utf-8")

    def sample(self, phase: str, events: list[str] | None = None) -> dict[str, Any]:
        values: dict[str, float] = {}
        throttle: dict[str, Any] = {}
        for s in self.sensors:
            try:
                r = s.read()
            except Exception as exc:  # one failing sensor costs its readings, not the sample
                s.note_error("read", exc)
                continue
            values.update(r.values)
            if r.throttle is not None:
                throttle[s.name] = r.throttle
        rec: dict[str, Any] = {
            "i": self.count,
            "t": round(self.clock() - self.t0, 3),
            "time": round(time.time(), 3),
            "phase": phase,
            "values": values,
        }
        if throttle:
            rec["throttle"] = throttle
        if events:
            rec["events"] = list(events)
        self._f.write(json.dumps(rec, separators=(",", ":"), allow_nan=False) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        self.count += 1
        self.last = rec
        return rec

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()


def read_samples(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every complete sample in a JSONL file (a torn last line from a kill is ignored)."""
    from ds4kit.reports.jsonl import read_jsonl_objects

    return read_jsonl_objects(path)


def missed_ticks(samples: list[dict[str, Any]], interval: float) -> int:
    """Ticks of the sampling grid that have no sample, read back from the timestamps: those
    before the first sample (its t counts from the sampler's start, the grid's first tick; a
    slow start under load had gone uncounted) and those inside the gaps of samples that overran."""
    if not samples:
        return 0
    ts = [float(x["t"]) for x in samples]
    before = max(0, round(ts[0] / interval))
    return before + sum(max(0, round((b - a) / interval) - 1) for a, b in zip(ts, ts[1:]))

