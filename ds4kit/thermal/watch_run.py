"""`ds4kit thermal watch` end to end: discover sensors, watch, write the run folder."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ds4kit.reports import atomic_write_text, start_run
from ds4kit.thermal.csv_out import samples_csv
from ds4kit.thermal.sampler import Sampler, missed_ticks, read_samples
from ds4kit.thermal.sensors import SOURCES, discover
from ds4kit.thermal.summary import summary_markdown, telemetry_results
from ds4kit.thermal.throttle import ThrottleParams
from ds4kit.thermal.watcher import WatchConfig, Watcher

SAMPLES_JSONL = "samples.jsonl"
SAMPLES_CSV = "samples.csv"
TIMELINE_PNG = "timeline.png"
CHILD_LOG = "child.log"


def run_watch(argv: list[str] | None, config: WatchConfig, *, out: str | os.PathLike | None = None,
              sysfs_root: str = "/", sources: tuple[str, ...] = SOURCES, quiet: bool = False,
              child_log: bool = False, plot: bool = True, throttle_params: ThrottleParams | None = None,
              command: list[str] | None = None) -> tuple[int, Path]:
    """Returns (exit code for the process, run folder)."""
    config.check()
    with start_run("thermal", out, command=command) as run:
        discovery = discover(sysfs_root, sources)
        try:
            if not discovery.sensors:
                run.warn("no-sensors", "no sensor is available; samples will hold timestamps only")
            samples_path = run.add_file("samples_jsonl", SAMPLES_JSONL)
            sampler = Sampler(discovery.sensors, samples_path)
            log = open(run.add_file("child_log", CHILD_LOG), "wb") if child_log and argv else None
            from ds4kit.thermal.live import LiveView

            view = LiveView(config.warn_at, config.abort_at)
            view.enabled = view.enabled and not quiet
            watcher = Watcher(config, sampler, on_sample=view.update, child_stdout=log,
                              say=(lambda m: view.console.print(m, markup=False, highlight=False)) if view.enabled else None)
            try:
                with view:
                    outcome = watcher.run(argv)
            finally:
                sampler.close()
                if log is not None:
                    log.close()
            samples = read_samples(samples_path)
            results: dict[str, Any] = {
                "mode": "command" if argv else "watch",
                "config": {
                    "interval_s": config.interval, "warn_at_c": config.warn_at, "abort_at_c": config.abort_at,
                    "abort_after_s": config.abort_after, "grace_s": config.grace,
                    "cooldown_until_c": config.cooldown_until, "cooldown_timeout_s": config.cooldown_timeout,
                    "duration_s": config.duration, "temp_patterns": list(config.temp_patterns),
                    "sysfs_root": str(sysfs_root), "sources": list(sources),
                },
            }
            ticker_missed = missed_ticks(samples, config.interval)
            results.update(telemetry_results(discovery, samples, interval=config.interval, missed_ticks=ticker_missed,
                                             temp_patterns=config.temp_patterns, warn_at=config.warn_at,
                                             abort_at=config.abort_at, throttle_params=throttle_params))
            results.update({
                "warnings_printed": outcome.warn_messages, "cooldown": outcome.cooldown, "abort": outcome.abort,
                "child": outcome.child, "interrupts": outcome.interrupts,
                "end_reason": outcome.end_reason, "exit_code": outcome.exit_code,
            })
            for code, msg in outcome.warnings:
                run.warn(code, msg)
            if results["throttle"]["episodes"]:
                run.warn("throttled", f"{len(results['throttle']['episodes'])} throttle episode(s); see results.throttle")
            atomic_write_text(run.add_file("samples_csv", SAMPLES_CSV), samples_csv(samples))
            if plot and samples:
                try:
                    from ds4kit.thermal.plots import timeline_png

                    timeline_png(run.path(TIMELINE_PNG), samples, results["throttle"]["episodes"],
                                 warn_at=config.warn_at, abort_at=config.abort_at,
                                 abort_t=outcome.abort["t"] if outcome.abort else None,
                                 title=f"ds4kit thermal {run.folder.name}: {outcome.end_reason}")
                    run.add_file("timeline_png", TIMELINE_PNG)
                except Exception as exc:  # a plot must never cost the report
                    run.warn("plot-failed", f"timeline.png not written: {type(exc).__name__}: {exc}")
            files = dict(run.report["files"])
            files.setdefault("summary", "summary.md")
            run.finish(results, status=outcome.status, summary_md=summary_markdown(results, files),
                       interrupt=watcher.stop.record() if outcome.status == "interrupted" else None)
        finally:
            discovery.close()
    if not quiet:
        print(f"ds4kit thermal: {outcome.end_reason or 'done'}; report in {run.folder}", file=sys.stderr)
    return outcome.exit_code, run.folder
