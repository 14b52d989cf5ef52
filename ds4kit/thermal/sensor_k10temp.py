"""AMD CPU temperatures (Tctl, Tccd*) from the ``k10temp`` hwmon chip."""
from __future__ import annotations

import os
from pathlib import Path

from ds4kit.thermal.sensor_base import Reading, Sensor, Unavailable, slug
from ds4kit.thermal.sysfs import check_readable, hwmon_dirs, read_int, read_text


class K10tempSensor(Sensor):
    source = "k10temp"

    def __init__(self, d: Path, files: dict[str, Path]):
        super().__init__()
        self.files = files
        self.name = f"k10temp:{d.name}"
        self.device = "cpu"
        self.description = f"{d} ({', '.join(files)})"

    def read(self) -> Reading:
        values = {}
        for key, path in self.files.items():
            try:
                values[key] = round(read_int(path) / 1000.0, 3)
            except (OSError, ValueError) as exc:
                self.note_error(path.name, exc)
        return Reading(values)


def probe(sysfs_root: str | os.PathLike) -> tuple[list[Sensor], list[Unavailable]]:
    found = hwmon_dirs(sysfs_root, "k10temp")
    if not found:
        return [], [Unavailable("k10temp", "no hwmon chip named 'k10temp' (not an AMD CPU, or the module is not loaded)")]
    sensors: list[Sensor] = []
    missing: list[Unavailable] = []
    for d, bad in found:
        if bad:
            continue
        files: dict[str, Path] = {}
        for f in sorted(d.glob("temp*_input")):
            stem = f.name[:-6]
            try:
                label = slug(read_text(d / f"{stem}_label"))
            except OSError:
                label = stem
            why = check_readable(f)
            if why:
                missing.append(Unavailable(f"k10temp:{d.name}", f"unreadable: {why}"))
                continue
            files[f"k10temp.{label}_c"] = f
        if files:
            sensors.append(K10tempSensor(d, files))
        else:
            missing.append(Unavailable(f"k10temp:{d.name}", f"{d} has no readable temp*_input"))
    return sensors, missing
