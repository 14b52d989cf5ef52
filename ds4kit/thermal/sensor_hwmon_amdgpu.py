"""AMD GPU temperatures, power and clocks from the ``amdgpu`` hwmon chip (units: m C, uW, Hz)."""
from __future__ import annotations

import os
from pathlib import Path

from ds4kit.thermal.sensor_base import Reading, Sensor, Unavailable, slug
from ds4kit.thermal.sysfs import check_readable, hwmon_dirs, read_int, read_text


def _label(d: Path, stem: str) -> str:
    try:
        return slug(read_text(d / f"{stem}_label"))
    except OSError:
        return stem


class HwmonAmdgpuSensor(Sensor):
    source = "hwmon-amdgpu"

    def __init__(self, d: Path, files: dict[str, tuple[Path, float]]):
        super().__init__()
        self.dir = d
        self.files = files  # metric key -> (file, scale to the key's unit)
        self.name = f"hwmon-amdgpu:{d.name}"
        self.device = d.name
        self.description = f"{d} ({len(files)} readings)"
        clocks = [k for k in files if k.endswith("sclk_mhz")]
        busy = [k for k in files if k.endswith("gpu_busy_pct")]
        if clocks and busy:
            self.clock_load_pairs = [(clocks[0], busy[0])]

    def read(self) -> Reading:
        values = {}
        for key, (path, scale) in self.files.items():
            try:
                values[key] = round(read_int(path) * scale, 3)
            except (OSError, ValueError) as exc:
                self.note_error(path.name, exc)
        return Reading(values)


def probe(sysfs_root: str | os.PathLike) -> tuple[list[Sensor], list[Unavailable]]:
    found = hwmon_dirs(sysfs_root, "amdgpu")
    if not found:
        return [], [Unavailable("hwmon-amdgpu", "no hwmon chip named 'amdgpu' under /sys/class/hwmon")]
    sensors: list[Sensor] = []
    missing: list[Unavailable] = []
    for d, bad in found:
        if bad:
            continue
        pre = f"{d.name}"
        files: dict[str, tuple[Path, float]] = {}
        skipped = []
        for f in sorted(d.glob("temp*_input")):
            files[f"{pre}.{_label(d, f.name[:-6])}_c"] = (f, 0.001)
        # power1_average (older dGPUs) or power1_input (newer, and APUs).
        for stem in ("power1_average", "power1_input"):
            if (d / stem).exists():
                files[f"{pre}.power_w"] = (d / stem, 1e-6)
                break
        for f in sorted(d.glob("freq*_input")):
            files[f"{pre}.{_label(d, f.name[:-6])}_mhz"] = (f, 1e-6)
        busy = d / "device" / "gpu_busy_percent"
        if busy.exists():
            files[f"{pre}.gpu_busy_pct"] = (busy, 1.0)
        for key, (path, _) in list(files.items()):
            why = check_readable(path)
            if why:
                skipped.append(why)
                del files[key]
        for why in skipped:
            missing.append(Unavailable(f"hwmon-amdgpu:{d.name}", f"unreadable: {why}"))
        if files:
            sensors.append(HwmonAmdgpuSensor(d, files))
        elif not skipped:
            missing.append(Unavailable(f"hwmon-amdgpu:{d.name}", f"{d} has no temp*/power1/freq* inputs"))
    return sensors, missing
