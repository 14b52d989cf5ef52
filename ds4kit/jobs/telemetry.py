"""`--thermal` on a long command: telemetry recorded into the command's own run folder, the
work's progress aligned with it, and `--abort-at` as a clean stop.

    with RunTelemetry(run, config.thermal, stop, say) as tel:
        for item in work:
            if stop.requested: break          # a thermal abort looks like a stop request
            ...; tel.progress(tokens_done)    # cumulative tokens (or items) so far
    results["telemetry"] = tel.results()      # None without --thermal

Samples go to telemetry.jsonl as they are taken (telemetry.csv and telemetry.png at the end);
progress is sampled with them, so the soak summary pairs each interval's throughput with the
temperature then (tok/s against temperature, throttle episodes during the run) and plots it
(telemetry-soak.png).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from ds4kit.errors import ConfigError

EXIT_THERMAL_ABORT = 3  # as `thermal watch` exits on an abort


@dataclass(frozen=True)
class ThermalOptions:
    enabled: bool = False
    interval: float = 1.0
    warn_at: float | None = None
    abort_at: float | None = None
    abort_after: float = 3.0
    sources: tuple[str, ...] | None = None   # None: every source (ds4kit.thermal.SOURCES)
    sysfs_root: str = "/"
    temp_patterns: tuple[str, ...] = ("*",)

    def check(self) -> None:
        if not self.enabled:
            for name, flag in (("warn_at", "--warn-at"), ("abort_at", "--abort-at")):
                if getattr(self, name) is not None:
                    raise ConfigError("needs --thermal (telemetry is what it is checked against)", flag)
            return
        if not self.interval > 0:
            raise ConfigError(f"must be positive, got {self.interval:g}", "--thermal-interval")
        if self.warn_at is not None and self.abort_at is not None and self.warn_at > self.abort_at:
            raise ConfigError(f"{self.warn_at:g} is above --abort-at {self.abort_at:g}", "--warn-at")
        if self.abort_after < 0:
            raise ConfigError("must not be negative", "--abort-after")


class RunTelemetry:
    def __init__(self, run: Any, options: ThermalOptions | None, stop: Any,
                 say: Callable[[str], None] = lambda m: None):
        self.run, self.o, self.stop, self.say = run, options or ThermalOptions(), stop, say
        self._rec = None
        self._monitor = None
        self._lock = threading.Lock()
        self._done = 0.0
        self._progress: list[tuple[float, float, float | None, str | None]] = []  # (t, done, temp, key)
        self._results: dict[str, Any] | None = None
        self.abort: dict[str, Any] | None = None

    def __enter__(self) -> "RunTelemetry":
        if not self.o.enabled:
            return self
        from ds4kit.thermal import SOURCES, TelemetryRecorder
        from ds4kit.thermal.thresholds import ThresholdMonitor

        self._monitor = ThresholdMonitor(warn_at=self.o.warn_at, abort_at=self.o.abort_at,
                                         abort_after=self.o.abort_after)
        self._rec = TelemetryRecorder(self.run.folder, interval=self.o.interval, sysfs_root=self.o.sysfs_root,
                                      sources=self.o.sources or SOURCES, temp_patterns=self.o.temp_patterns,
                                      warn_at=self.o.warn_at, on_sample=self._on_sample)
        self._rec.start()
        return self

    def _on_sample(self, rec: dict[str, Any]) -> None:
        from ds4kit.thermal.stats import watched_temperature

        temp, key = watched_temperature(rec["values"], self.o.temp_patterns)
        with self._lock:
            self._progress.append((rec["t"], self._done, temp, key))
        v = self._monitor.check(rec["t"], temp, key)
        if v.warning:
            self.say(v.warning)
        for e in v.events:
            self._rec.mark(e)
        if v.abort is not None:
            self.abort = v.abort
            self.say(f"ds4kit thermal ABORT: {v.abort['reason']}; stopping after the current step")
            self.stop.request("thermal", v.abort["reason"], EXIT_THERMAL_ABORT)

    def progress(self, done: float) -> None:
        """Work done so far (cumulative tokens, or items): paired with each later sample."""
        self._done = float(done)

    def mark(self, label: str) -> None:
        if self._rec is not None:
            self._rec.mark(label)

    def __exit__(self, *exc: Any) -> None:
        if self._rec is None or self._results is not None:
            return
        tel = self._rec.stop()
        for label, name in self._rec.files.items():
            self.run.add_file(label, name)
        soak = self._soak()
        if soak["windows"]:
            png = self._soak_png(soak)
            if png:
                self.run.add_file("telemetry_soak_png", png)
        self._results = {**tel, "soak": soak, "thermal_abort": self.abort}

    def results(self) -> dict[str, Any] | None:
        return self._results

    def _soak(self) -> dict[str, Any]:
        """Throughput per sampling interval against the temperature at its end."""
        with self._lock:
            pts = list(self._progress)
        windows = []
        for (t0, d0, _, _), (t1, d1, temp, key) in zip(pts, pts[1:]):
            if t1 > t0:
                windows.append({"t_start": t0, "t": t1, "rate": (d1 - d0) / (t1 - t0), "temp_c": temp,
                                "metric": key})
        rated = [w for w in windows if w["temp_c"] is not None and w["rate"] > 0]
        corr = None
        if len(rated) >= 3:
            import numpy as np

            x = np.array([w["temp_c"] for w in rated])
            y = np.array([w["rate"] for w in rated])
            if x.std() > 0 and y.std() > 0:
                corr = float(np.corrcoef(x, y)[0, 1])
        episodes = (self._rec.results or {}).get("throttle", {}).get("episodes", [])
        return {"windows": windows, "rate_unit": "per second of the command's progress unit",
                "rate_temp_correlation": corr, "throttle_episodes": len(episodes)}

    def _soak_png(self, soak: dict[str, Any]) -> str | None:
        pts = [w for w in soak["windows"] if w["temp_c"] is not None]
        if not pts:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
        a1.plot([w["t"] for w in soak["windows"]], [w["rate"] for w in soak["windows"]], color="tab:blue")
        a1.set_xlabel("s")
        a1.set_ylabel("rate", color="tab:blue")
        a1b = a1.twinx()
        a1b.plot([w["t"] for w in pts], [w["temp_c"] for w in pts], color="tab:red")
        a1b.set_ylabel("C", color="tab:red")
        a1.set_title("throughput and temperature")
        a2.scatter([w["temp_c"] for w in pts], [w["rate"] for w in pts], s=10)
        a2.set_xlabel("temperature (C)")
        a2.set_ylabel("rate")
        a2.set_title("rate against temperature")
        fig.tight_layout()
        name = "telemetry-soak.png"
        fig.savefig(self.run.folder / name, dpi=100)
        plt.close(fig)
        return name
