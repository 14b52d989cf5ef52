"""Find every sensor this machine offers; list the ones it does not, with the reason."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ds4kit.thermal import sensor_amdsmi, sensor_gpu_metrics, sensor_hwmon_amdgpu, sensor_k10temp, sensor_nvml, sensor_psutil
from ds4kit.thermal.sensor_base import Sensor, Unavailable

SOURCES = ("nvml", "amdsmi", "gpu_metrics", "hwmon-amdgpu", "k10temp", "psutil")


@dataclass
class Discovery:
    sensors: list[Sensor] = field(default_factory=list)
    unavailable: list[Unavailable] = field(default_factory=list)

    def close(self) -> None:
        for s in self.sensors:
            try:
                s.close()
            except Exception:
                pass

    def clock_load_pairs(self) -> list[tuple[str, str]]:
        return [p for s in self.sensors for p in s.clock_load_pairs]


def parse_sources(text: str | None) -> tuple[str, ...]:
    """'all' or a comma list of SOURCES; unknown names are an error that lists the known ones."""
    if not text or text == "all":
        return SOURCES
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in SOURCES]
    if bad:
        raise ValueError(f"unknown sensor source(s) {', '.join(bad)}; known: {', '.join(SOURCES)}, or 'all'")
    return names


def discover(sysfs_root: str | os.PathLike = "/", sources: tuple[str, ...] = SOURCES) -> Discovery:
    d = Discovery()
    probes = {
        "nvml": lambda: sensor_nvml.probe(),
        "amdsmi": lambda: sensor_amdsmi.probe(),
        "gpu_metrics": lambda: sensor_gpu_metrics.probe(sysfs_root),
        "hwmon-amdgpu": lambda: sensor_hwmon_amdgpu.probe(sysfs_root),
        "k10temp": lambda: sensor_k10temp.probe(sysfs_root),
        "psutil": lambda: sensor_psutil.probe(sysfs_root),
    }
    for name in SOURCES:
        if name not in sources:
            d.unavailable.append(Unavailable(name, "not selected (--sensors)"))
            continue
        try:
            found, missing = probes[name]()
        except Exception as exc:  # a broken sensor must never stop the watch
            found, missing = [], [Unavailable(name, f"probe crashed: {type(exc).__name__}: {exc}")]
        d.sensors.extend(found)
        d.unavailable.extend(missing)
    return d
