"""`--thermal` and its thresholds on every long command (generate, probes, evals, bench)."""
from __future__ import annotations

import click

from ds4kit.jobs.telemetry import ThermalOptions


def thermal_flags(f):
    """--thermal, --thermal-interval, --warn-at, --abort-at, --abort-after, --thermal-sensors."""
    options = [
        click.option("--thermal", "thermal", is_flag=True,
                     help="Record temperature, power, clocks and throttling into this run's report "
                          "(telemetry.jsonl/.csv/.png, a soak summary of throughput against temperature)."),
        click.option("--thermal-interval", type=float, default=1.0, show_default=True,
                     help="Seconds between telemetry samples."),
        click.option("--warn-at", type=float, default=None, help="Warn when the hottest sensor reaches this many C."),
        click.option("--abort-at", type=float, default=None,
                     help="Stop cleanly (after the current step, keeping every finished item; exit 3) when the "
                          "hottest sensor stays at or above this many C for --abort-after seconds."),
        click.option("--abort-after", type=float, default=3.0, show_default=True,
                     help="Seconds --abort-at must hold before the stop."),
        click.option("--thermal-sensors", default="all", show_default=True,
                     help="Telemetry sources: all, or a comma list (nvml, amdsmi, gpu_metrics, hwmon-amdgpu, "
                          "k10temp, psutil)."),
        click.option("--thermal-sysfs-root", default="/", hidden=True, help="sysfs root for the sysfs sensors (tests)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def thermal_options(thermal: bool, thermal_interval: float, warn_at: float | None, abort_at: float | None,
                    abort_after: float, thermal_sensors: str, thermal_sysfs_root: str) -> ThermalOptions:
    from ds4kit.thermal.sensors import parse_sources

    try:
        sources = parse_sources(thermal_sensors)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--thermal-sensors") from None
    opts = ThermalOptions(enabled=thermal, interval=thermal_interval, warn_at=warn_at, abort_at=abort_at,
                          abort_after=abort_after, sources=tuple(sources), sysfs_root=thermal_sysfs_root)
    opts.check()
    return opts


def pop_thermal(kwargs: dict) -> ThermalOptions:
    """Take the thermal flags out of a command's keyword arguments."""
    names = ("thermal", "thermal_interval", "warn_at", "abort_at", "abort_after", "thermal_sensors",
             "thermal_sysfs_root")
    return thermal_options(*(kwargs.pop(n) for n in names))
