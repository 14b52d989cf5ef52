"""AMD GPU telemetry from ``/sys/class/drm/card*/device/gpu_metrics`` (works on APUs, where amdsmi says N/A)."""
from __future__ import annotations

import os

from ds4kit.thermal.gpu_metrics import GpuMetricsError, decode
from ds4kit.thermal.sensor_base import Reading, Sensor, Unavailable
from ds4kit.thermal.sysfs import read_bytes, under


class GpuMetricsSensor(Sensor):
    source = "gpu_metrics"

    def __init__(self, card: str, path, layout: str):
        super().__init__()
        self.card = card
        self.path = path
        self.name = f"gpu_metrics:{card}"
        self.device = card
        self.description = f"{path} ({layout})"
        self.clock_load_pairs = [(f"{card}.gfxclk_mhz", f"{card}.gfx_activity_pct")]

    def read(self) -> Reading:
        try:
            m = decode(read_bytes(self.path))
        except (OSError, GpuMetricsError) as exc:
            self.note_error("gpu_metrics", exc)
            return Reading()
        c = self.card
        values: dict[str, float] = {}
        for k, v in m.temperatures_c.items():
            values[f"{c}.{k}_c"] = v
        for k, v in m.power_w.items():
            values[f"{c}.{k.replace('average_', '').replace('curr_', '')}_w"] = v
        for k, v in m.clocks_mhz.items():
            short = k.replace("average_", "avg_").replace("_frequency", "")
            values[f"{c}.{short}_mhz"] = v
        if "average_gfxclk_frequency" in m.clocks_mhz:
            values[f"{c}.gfxclk_mhz"] = m.clocks_mhz["average_gfxclk_frequency"]
        elif "current_gfxclk" in m.clocks_mhz:
            values[f"{c}.gfxclk_mhz"] = m.clocks_mhz["current_gfxclk"]
        for k, v in m.activity_pct.items():
            values[f"{c}.{k.replace('average_', '')}_pct"] = v
        throttle = {"source": "gpu_metrics", "layout": m.layout}
        if m.throttle_status is not None:
            throttle["status"] = m.throttle_status
        if m.indep_throttle_status is not None:
            throttle["indep"] = m.indep_throttle_status
            throttle["active"] = m.indep_throttle_names()
        if m.throttle_residency:
            throttle["residency"] = dict(m.throttle_residency)
        return Reading(values, throttle)


def probe(sysfs_root: str | os.PathLike) -> tuple[list[Sensor], list[Unavailable]]:
    cards = sorted(under(sysfs_root, "/sys/class/drm").glob("card[0-9]*"), key=lambda p: (len(p.name), p.name))
    cards = [c for c in cards if c.name[4:].isdigit()]  # card0, not card0-DP-1 connectors
    if not cards:
        return [], [Unavailable("gpu_metrics", f"no {under(sysfs_root, '/sys/class/drm')}/card* devices")]
    sensors: list[Sensor] = []
    missing: list[Unavailable] = []
    for card in cards:
        path = card / "device" / "gpu_metrics"
        if not path.exists():
            missing.append(Unavailable(f"gpu_metrics:{card.name}", f"{path} does not exist (not amdgpu, or a kernel without gpu_metrics)"))
            continue
        try:
            m = decode(read_bytes(path))
        except OSError as exc:
            missing.append(Unavailable(f"gpu_metrics:{card.name}", f"{path}: unreadable ({type(exc).__name__}: {exc.strerror or exc})"))
            continue
        except GpuMetricsError as exc:
            missing.append(Unavailable(f"gpu_metrics:{card.name}", f"{path}: {exc}"))
            continue
        s = GpuMetricsSensor(card.name, path, m.layout)
        if m.note:
            s.description += f"; {m.note}"
        sensors.append(s)
    return sensors, missing
