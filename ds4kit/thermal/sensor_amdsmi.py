"""AMD GPU telemetry through ``amdsmi`` (ROCm), when its library loads.

amdsmi raises KeyError or OSError, not ImportError, when ``libamd_smi.so`` is missing,
and on gfx1151 (Strix Halo) many queries answer "N/A"; both become reasons, not crashes.
"""
from __future__ import annotations

from typing import Any

from ds4kit.thermal.sensor_base import Reading, Sensor, Unavailable


def _number(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None  # "N/A" and friends


class AmdsmiSensor(Sensor):
    source = "amdsmi"

    def __init__(self, amdsmi, index: int, handle):
        super().__init__()
        self.amdsmi = amdsmi
        self.handle = handle
        self.name = f"amdsmi:{index}"
        self.device = f"amdgpu{index}"
        self.description = f"amdsmi processor {index}"
        g = self.device
        self.clock_load_pairs = [(f"{g}.gfx_clock_mhz", f"{g}.gfx_activity_pct")]

    def _temps(self, values: dict[str, float]) -> None:
        a = self.amdsmi
        for label in ("EDGE", "HOTSPOT", "VRAM"):
            try:
                kind = getattr(a.AmdSmiTemperatureType, label)
                v = _number(a.amdsmi_get_temp_metric(self.handle, kind, a.AmdSmiTemperatureMetric.CURRENT))
            except Exception as exc:
                self.note_error(f"temp_{label.lower()}", exc)
                continue
            if v is None:
                self.note_error(f"temp_{label.lower()}", "N/A")
            else:
                values[f"{self.device}.{label.lower()}_c"] = v

    def read(self) -> Reading:
        a, g = self.amdsmi, self.device
        values: dict[str, float] = {}
        self._temps(values)
        try:
            p = a.amdsmi_get_power_info(self.handle)
            for key in ("current_socket_power", "average_socket_power"):
                v = _number(p.get(key))
                if v is not None:
                    values[f"{g}.socket_power_w"] = v
                    break
            else:
                self.note_error("power", "N/A")
        except Exception as exc:
            self.note_error("power", exc)
        try:
            c = a.amdsmi_get_clock_info(self.handle, a.AmdSmiClkType.GFX)
            v = _number(c.get("clk", c.get("cur_clk")))  # the key was cur_clk in ROCm 5.x
            if v is not None:
                values[f"{g}.gfx_clock_mhz"] = v
            else:
                self.note_error("gfx_clock", "N/A")
        except Exception as exc:
            self.note_error("gfx_clock", exc)
        try:
            act = a.amdsmi_get_gpu_activity(self.handle)
            v = _number(act.get("gfx_activity"))
            if v is not None:
                values[f"{g}.gfx_activity_pct"] = v
        except Exception as exc:
            self.note_error("activity", exc)
        return Reading(values)


def probe() -> tuple[list[Sensor], list[Unavailable]]:
    try:
        import amdsmi
    except ImportError:
        return [], [Unavailable("amdsmi", "amdsmi not installed (it ships with ROCm)")]
    except (KeyError, OSError) as exc:
        # Its import looks up ROCM_PATH / dlopens libamd_smi.so and fails this way when absent.
        return [], [Unavailable("amdsmi", f"amdsmi could not load libamd_smi.so ({type(exc).__name__}: {exc})")]
    except Exception as exc:
        return [], [Unavailable("amdsmi", f"importing amdsmi failed: {type(exc).__name__}: {exc}")]
    try:
        amdsmi.amdsmi_init()
        handles = amdsmi.amdsmi_get_processor_handles()
    except Exception as exc:
        return [], [Unavailable("amdsmi", f"amdsmi_init failed: {type(exc).__name__}: {exc}")]
    if not handles:
        _shut_down(amdsmi)
        return [], [Unavailable("amdsmi", "amdsmi reports no AMD GPUs")]
    sensors: list[Sensor] = []
    missing: list[Unavailable] = []
    for i, h in enumerate(handles):
        s = AmdsmiSensor(amdsmi, i, h)
        first = s.read()
        if not first.values:
            missing.append(Unavailable(s.name, "every amdsmi query answered N/A or failed: "
                                       + "; ".join(f"{k}: {v}" for k, v in s.read_errors.items())))
            continue
        s.read_errors.clear()
        s.read_error_count = 0
        sensors.append(s)
    if sensors:
        # One amdsmi_shut_down, when the last of these sensors closes.
        users = [len(sensors)]

        def release() -> None:
            users[0] -= 1
            if users[0] == 0:
                _shut_down(amdsmi)
        for s in sensors:
            s.close = release  # type: ignore[method-assign]
    else:
        _shut_down(amdsmi)
    return sensors, missing


def _shut_down(amdsmi) -> None:
    try:
        amdsmi.amdsmi_shut_down()
    except Exception:
        pass
