"""Record telemetry inside another command's run, in a background thread.

    from ds4kit.thermal import TelemetryRecorder
    with start_run("bench", out) as run:
        with TelemetryRecorder(run.folder) as tel:
            ...                      # the work; tel.mark("decode 4096") aligns events with samples
        results["telemetry"] = tel.results
        for label, name in tel.files.items():
            run.add_file(label, name)

Samples go to ``telemetry.jsonl`` as they are taken (a crash loses nothing); stop() adds
``telemetry.csv`` and ``telemetry.png`` and returns the same summary a thermal report has
(sensors with reasons, per-metric min/median/max, peak temperature, throttle episodes).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable

from ds4kit.reports import atomic_write_text
from ds4kit.thermal.csv_out import samples_csv
from ds4kit.thermal.sampler import Sampler, Ticker, read_samples
from ds4kit.thermal.sensors import SOURCES, Discovery, discover
from ds4kit.thermal.summary import telemetry_results


class TelemetryRecorder:
    def __init__(self, folder: str | os.PathLike, *, interval: float = 1.0, sysfs_root: str = "/",
                 sources: tuple[str, ...] = SOURCES, prefix: str = "telemetry", temp_patterns: tuple[str, ...] = ("*",),
                 warn_at: float | None = None, plot: bool = True,
                 on_sample: "Callable[[dict[str, Any]], None] | None" = None):
        if not interval > 0:
            raise ValueError(f"telemetry interval must be positive, got {interval}")
        self.folder = Path(folder)
        self.interval = interval
        self.sysfs_root = sysfs_root
        self.sources = sources
        self.prefix = prefix
        self.temp_patterns = temp_patterns
        self.warn_at = warn_at
        self.plot = plot
        self.on_sample = on_sample  # called in the sampling thread with each sample record
        self.files: dict[str, str] = {}
        self.results: dict[str, Any] | None = None
        self._discovery: Discovery | None = None
        self._sampler: Sampler | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._marks: list[str] = []
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._missed = 0

    def start(self) -> "TelemetryRecorder":
        if self._thread is not None:
            raise RuntimeError("TelemetryRecorder already started")
        self._discovery = discover(self.sysfs_root, self.sources)
        name = f"{self.prefix}.jsonl"
        self._sampler = Sampler(self._discovery.sensors, self.folder / name)
        self.files[f"{self.prefix}_jsonl"] = name
        self._thread = threading.Thread(target=self._loop, name="ds4kit-telemetry", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        ticker = Ticker(self.interval)
        try:
            while True:
                with self._lock:
                    marks, self._marks = self._marks, []
                rec = self._sampler.sample("api", marks)
                if self.on_sample is not None:
                    self.on_sample(rec)
                if self._stop.wait(ticker.delay()):
                    break
        except BaseException as exc:  # recorded and re-raised in stop(), never lost in the thread
            self._error = exc
        self._missed = ticker.missed

    def mark(self, label: str) -> None:
        """Attach an event label to the next sample (e.g. where a benchmark phase starts)."""
        with self._lock:
            self._marks.append(label)

    def latest(self) -> dict[str, Any] | None:
        return self._sampler.last if self._sampler else None

    def stop(self) -> dict[str, Any]:
        if self._thread is None:
            raise RuntimeError("TelemetryRecorder was not started")
        self._stop.set()
        self._thread.join()
        self._sampler.sample("api", self._marks + ["stop"])  # the state at the very end
        self._sampler.close()
        self._discovery.close()
        if self._error is not None:
            raise RuntimeError(f"telemetry sampling failed: {self._error}") from self._error
        samples = read_samples(self._sampler.path)
        self.results = {"mode": "api", **telemetry_results(
            self._discovery, samples, interval=self.interval, missed_ticks=self._missed,
            temp_patterns=self.temp_patterns, warn_at=self.warn_at)}
        csv_name = f"{self.prefix}.csv"
        atomic_write_text(self.folder / csv_name, samples_csv(samples))
        self.files[f"{self.prefix}_csv"] = csv_name
        if self.plot and samples:
            from ds4kit.thermal.plots import timeline_png

            png = f"{self.prefix}.png"
            timeline_png(self.folder / png, samples, self.results["throttle"]["episodes"], warn_at=self.warn_at,
                         abort_at=None, title=f"telemetry {self.folder.name}")
            self.files[f"{self.prefix}_png"] = png
        return self.results

    def __enter__(self) -> "TelemetryRecorder":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._thread is not None and self.results is None:
            self.stop()
