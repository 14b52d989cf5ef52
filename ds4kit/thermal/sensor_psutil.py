"""CPU load and frequency, and temperatures of chips no dedicated sensor covers, through psutil."""
from __future__ import annotations

import os

from ds4kit.thermal.sensor_base import Reading, Sensor, Unavailable, slug

# Chips read directly from sysfs by their own sensors; psutil would only duplicate them.
_OWN_SENSORS = {"amdgpu", "k10temp"}


class PsutilSensor(Sensor):
    source = "psutil"
    name = "psutil:cpu"
    device = "cpu"

    def __init__(self, psutil, with_temps: bool):
        super().__init__()
        self.psutil = psutil
        self.with_temps = with_temps
        psutil.cpu_percent(interval=None)  # the first call only primes the counter
        self.description = "CPU load, frequency" + (" and temperatures" if with_temps else "")

    def read(self) -> Reading:
        p = self.psutil
        values = {"cpu.load_pct": float(p.cpu_percent(interval=None))}
        try:
            f = p.cpu_freq()
            if f is not None and f.current:
                values["cpu.freq_mhz"] = float(f.current)
        except Exception as exc:  # some VMs have no cpufreq
            self.note_error("cpu_freq", exc)
        if self.with_temps:
            try:
                temps = p.sensors_temperatures()
            except Exception as exc:
                self.note_error("sensors_temperatures", exc)
                temps = {}
            for chip, entries in temps.items():
                if chip in _OWN_SENSORS:
                    continue
                for i, e in enumerate(entries):
                    values[f"{slug(chip)}.{slug(e.label) if e.label else f'temp{i + 1}'}_c"] = float(e.current)
        return Reading(values)


def probe(sysfs_root: str | os.PathLike) -> tuple[list[Sensor], list[Unavailable]]:
    try:
        import psutil
    except ImportError:
        return [], [Unavailable("psutil", "psutil not installed")]
    missing: list[Unavailable] = []
    with_temps = os.path.realpath(sysfs_root) == "/"
    if not with_temps:
        missing.append(Unavailable("psutil:temperatures", "psutil reads the real /sys; with --sysfs-root only the hwmon sensors read the given tree"))
    elif not hasattr(psutil, "sensors_temperatures"):
        missing.append(Unavailable("psutil:temperatures", "psutil has no sensors_temperatures on this platform"))
        with_temps = False
    else:
        try:
            chips = {c for c in psutil.sensors_temperatures() if c not in _OWN_SENSORS}
        except Exception as exc:
            chips = set()
            missing.append(Unavailable("psutil:temperatures", f"sensors_temperatures failed: {exc}"))
        if not chips:
            missing.append(Unavailable("psutil:temperatures", "no temperature chips beyond amdgpu/k10temp (no /sys/class/hwmon entries)"))
            with_temps = False
    return [PsutilSensor(psutil, with_temps)], missing
