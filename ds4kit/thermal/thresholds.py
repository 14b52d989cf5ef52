"""Warn and abort thresholds over a stream of temperature samples: the one place that decides
when a temperature is too high (thermal watch's watcher and `--thermal` on other commands).

    mon = ThresholdMonitor(warn_at=88, abort_at=95, abort_after=3, warn_every=60)
    verdict = mon.check(t, temp_c, key)      # .warning (a message or None), .events, .abort (dict or None)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ThresholdVerdict:
    warning: str | None = None                 # a message to show now (rate-limited)
    events: list[str] = field(default_factory=list)  # labels for the sample log
    abort: dict[str, Any] | None = None        # set once, when the abort condition is first met


class ThresholdMonitor:
    def __init__(self, *, warn_at: float | None, abort_at: float | None, abort_after: float = 3.0,
                 warn_every: float = 60.0):
        self.warn_at, self.abort_at, self.abort_after, self.warn_every = warn_at, abort_at, abort_after, warn_every
        self._above_warn = False
        self._last_warn_t = -1e18
        self._abort_above_since: float | None = None
        self.aborted: dict[str, Any] | None = None

    def check(self, t: float, temp: float | None, key: str | None) -> ThresholdVerdict:
        v = ThresholdVerdict()
        if temp is None:
            return v
        if self.warn_at is not None:
            if temp >= self.warn_at:
                if not self._above_warn or t - self._last_warn_t >= self.warn_every:
                    v.warning = f"ds4kit thermal WARNING: {key} = {temp:g} C >= --warn-at {self.warn_at:g} C (t={t:.1f}s)"
                    self._last_warn_t = t
                    v.events.append(f"warn {key}={temp:g}")
                self._above_warn = True
            elif self._above_warn:
                self._above_warn = False
                v.events.append(f"below warn {key}={temp:g}")
        if self.abort_at is None or self.aborted is not None:
            return v
        if temp >= self.abort_at:
            if self._abort_above_since is None:
                self._abort_above_since = t
            held = t - self._abort_above_since
            if held >= self.abort_after:
                self.aborted = v.abort = {
                    "t": t, "metric": key, "value_c": temp, "abort_at_c": self.abort_at, "held_s": round(held, 3),
                    "reason": f"{key} = {temp:g} C stayed >= --abort-at {self.abort_at:g} C for {held:.1f} s "
                              f"(--abort-after {self.abort_after:g} s)",
                }
        else:
            self._abort_above_since = None
        return v
