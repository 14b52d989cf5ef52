"""`ds4kit thermal ...`: soak-run telemetry (temperatures, power, clocks, throttling)."""
from __future__ import annotations

import sys
from pathlib import Path

import click


def _sources(text: str) -> tuple[str, ...]:
    from ds4kit.thermal.sensors import parse_sources

    try:
        return parse_sources(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--sensors") from None


@click.group()
def thermal() -> None:
    """Watch temperatures, power and clocks; stop a run before the hardware does."""


@thermal.command("sensors")
@click.option("--sysfs-root", default="/", show_default=True, type=click.Path(file_okay=False),
              help="Read /sys under this folder instead (tests use a fake tree).")
@click.option("--sensors", "sensors_", default="all", show_default=True,
              help="Comma list of sources: nvml, amdsmi, gpu_metrics, hwmon-amdgpu, k10temp, psutil.")
def sensors_cmd(sysfs_root: str, sensors_: str) -> None:
    """List the sensors found, one reading from each, and why the others are unavailable."""
    from ds4kit.thermal.sensors import discover

    d = discover(sysfs_root, _sources(sensors_))
    try:
        for s in d.sensors:
            r = s.read()
            click.echo(f"found   {s.name}: {s.description}")
            for k, v in sorted(r.values.items()):
                click.echo(f"          {k} = {v:g}")
            if r.throttle and r.throttle.get("active"):
                click.echo(f"          throttle: {', '.join(r.throttle['active'])}")
            for item, msg in s.read_errors.items():
                click.echo(f"          read error {item}: {msg}")
        for u in d.unavailable:
            click.echo(f"missing {u.name}: {u.reason}")
    finally:
        d.close()


@thermal.command("watch", context_settings={"ignore_unknown_options": False})
@click.option("--interval", default=1.0, show_default=True, type=float, help="Seconds between samples.")
@click.option("--warn-at", type=float, default=None, help="Print a warning when the watched temperature reaches C.")
@click.option("--abort-at", type=float, default=None,
              help="Stop the command (SIGINT, then SIGTERM) when the watched temperature stays at or above C.")
@click.option("--abort-after", type=float, default=3.0, show_default=True,
              help="Seconds the temperature must stay at or above --abort-at before stopping.")
@click.option("--grace", type=float, default=10.0, show_default=True,
              help="Seconds between SIGINT and SIGTERM (and between SIGTERM and SIGKILL).")
@click.option("--cooldown-until", type=float, default=None, help="Before starting, wait until below C.")
@click.option("--cooldown-timeout", type=float, default=1800.0, show_default=True,
              help="Give up (exit 4, command not started) if not cooled within this many seconds.")
@click.option("--duration", type=float, default=None, help="Without a command: stop watching after this many seconds.")
@click.option("--temp", "temp_patterns", multiple=True, default=("*",), show_default=True,
              help="Glob over temperature metric keys to watch (repeatable), e.g. 'gpu*' or 'card0.hotspot_c'. "
                   "The hottest match is compared with --warn-at/--abort-at.")
@click.option("--sensors", "sensors_", default="all", show_default=True,
              help="Comma list of sources: nvml, amdsmi, gpu_metrics, hwmon-amdgpu, k10temp, psutil.")
@click.option("--sysfs-root", default="/", show_default=True, type=click.Path(file_okay=False),
              help="Read /sys under this folder instead (tests use a fake tree).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default runs/thermal-<utc>/).")
@click.option("--quiet", is_flag=True, help="No live view (warnings and the abort are still printed).")
@click.option("--child-log", is_flag=True, help="Send the command's stdout/stderr to child.log in the run folder.")
@click.option("--no-plot", is_flag=True, help="Skip timeline.png.")
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED)
def watch(interval, warn_at, abort_at, abort_after, grace, cooldown_until, cooldown_timeout, duration,
          temp_patterns, sensors_, sysfs_root, out, quiet, child_log, no_plot, cmd) -> None:
    """Sample telemetry while CMD runs (after `--`), and exit with its exit code.

    \b
      ds4kit thermal watch --warn-at 88 --abort-at 95 -- ds4kit bench ...
      ds4kit thermal watch --duration 600          # no command: watch for 10 minutes
    Exit codes: the command's own; 3 thermal abort; 4 cooldown timed out; 5 command not startable.
    """
    from ds4kit.jobs.thermal_watch import ThermalWatchConfig, run
    from ds4kit.reports.read import read_report
    from ds4kit.thermal.watcher import WatchConfig

    watch_config = WatchConfig(interval=interval, warn_at=warn_at, abort_at=abort_at, abort_after=abort_after,
                               grace=grace, cooldown_until=cooldown_until, cooldown_timeout=cooldown_timeout,
                               duration=duration, temp_patterns=tuple(temp_patterns))
    config = ThermalWatchConfig(argv=list(cmd) or None, watch=watch_config, sysfs_root=sysfs_root,
                                sources=_sources(sensors_), quiet=quiet, child_log=child_log, plot=not no_plot,
                                out=out, command=list(sys.argv))
    path = run(config)
    sys.exit(int(read_report(path)["results"]["exit_code"]))
