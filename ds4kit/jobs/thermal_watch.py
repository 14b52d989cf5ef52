"""The `thermal watch` job: telemetry while a command runs (or for a while), warn, abort, cool down.

    report = thermal_watch.run(ThermalWatchConfig(argv=["ds4kit", "bench", "engine"], watch=WatchConfig(abort_at=95)))

The work is ds4kit.thermal.watch_run; this module gives it the job shape. The exit code the
command should end with (the child's own, or 3/4/5) is the report's results.exit_code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ds4kit.errors import ConfigError
from ds4kit.reports.run import check_run_folder
from ds4kit.thermal.sensors import SOURCES
from ds4kit.thermal.watcher import WatchConfig


@dataclass
class ThermalWatchConfig:
    argv: list[str] | None = None          # the command to run under watch; None: watch only
    watch: WatchConfig = field(default_factory=WatchConfig)
    sysfs_root: str = "/"
    sources: tuple[str, ...] = SOURCES
    quiet: bool = False
    child_log: bool = False
    plot: bool = True
    out: Path | None = None
    command: list[str] | None = field(default=None, repr=False)

    def check(self) -> None:
        try:
            self.watch.check()
        except ValueError as exc:  # its messages name their flags
            raise ConfigError(str(exc)) from None
        check_run_folder(self.out)


def run(config: ThermalWatchConfig, target: Any = None) -> Path:
    """Watch; returns the path of report.json. The watcher forwards Ctrl-C to the command itself
    (SIGINT, then SIGTERM, then SIGKILL) and records it, so no StopSignals is installed here.
    `target` is unused: thermal watch talks to sensors, not to a model."""
    from ds4kit.thermal.watch_run import run_watch

    config.check()
    _, folder = run_watch(config.argv, config.watch, out=config.out, sysfs_root=config.sysfs_root,
                          sources=config.sources, quiet=config.quiet, child_log=config.child_log, plot=config.plot,
                          command=config.command)
    return folder / "report.json"
