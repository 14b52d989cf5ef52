"""NVIDIA GPU telemetry through NVML (PyPI ``nvidia-ml-py``, imported as ``pynvml``)."""
from __future__ import annotations

from typing import Any, Callable

from ds4kit.thermal.sensor_base import Reading, Sensor, Unavailable

# nvmlClocksEventReason* bit values (nvml.h); the names are the ones NVIDIA documents.
CLOCK_EVENT_REASONS = {
    0x1: "GpuIdle", 0x2: "ApplicationsClocksSetting", 0x4: "SwPowerCap", 0x8: "HwSlowdown",
    0x10: "SyncBoost", 0x20: "SwThermalSlowdown", 0x40: "HwThermalSlowdown",
    0x80: "HwPowerBrakeSlowdown", 0x100: "DisplayClockSetting",
}
# Reasons that mean the GPU ran slower than it was asked to; the others are informational.
THROTTLE_REASONS = {"SwPowerCap", "HwSlowdown", "SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown"}


def reason_names(bits: int) -> list[str]:
    return [name for bit, name in sorted(CLOCK_EVENT_REASONS.items()) if bits & bit] + (
        [f"0x{bits & ~sum(CLOCK_EVENT_REASONS):x}"] if bits & ~sum(CLOCK_EVENT_REASONS) else [])


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class NvmlSensor(Sensor):
    source = "nvml"

    def __init__(self, nvml, index: int, handle):
        super().__init__()
        self.nvml = nvml
        self.handle = handle
        self.index = index
        self.name = f"nvml:{index}"
        self.device = f"gpu{index}"
        self.description = _text(nvml.nvmlDeviceGetName(handle))
        self.limits: dict[str, float] = {}
        g = self.device
        self.clock_load_pairs = [(f"{g}.sm_clock_mhz", f"{g}.util_gpu_pct")]
        self._reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nvml, "nvmlDeviceGetCurrentClocksThrottleReasons")
        self._calls: dict[str, Callable[[], float]] = {
            f"{g}.temp_c": lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
            f"{g}.power_w": lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            f"{g}.sm_clock_mhz": lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
            f"{g}.graphics_clock_mhz": lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_GRAPHICS),
            f"{g}.mem_clock_mhz": lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
        }
        self._read_limits()

    def _read_limits(self) -> None:
        n, h = self.nvml, self.handle
        for key, fn in (
            ("max_sm_clock_mhz", lambda: n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM)),
            ("power_limit_w", lambda: n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
            ("slowdown_temp_c", lambda: n.nvmlDeviceGetTemperatureThreshold(h, n.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)),
            ("shutdown_temp_c", lambda: n.nvmlDeviceGetTemperatureThreshold(h, n.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)),
        ):
            try:
                self.limits[key] = float(fn())
            except Exception:  # NotSupported on some boards: the limit is simply not reported
                pass
        self.description += "".join(f", {k}={v:g}" for k, v in self.limits.items())

    def read(self) -> Reading:
        values: dict[str, float] = {}
        for key, fn in list(self._calls.items()):
            try:
                values[key] = float(fn())
            except self.nvml.NVMLError_NotSupported:
                del self._calls[key]  # stop asking; say once why it is missing
                self.note_error(key, "not supported by this GPU/driver")
            except Exception as exc:
                self.note_error(key, exc)
        try:
            u = self.nvml.nvmlDeviceGetUtilizationRates(self.handle)
            values[f"{self.device}.util_gpu_pct"] = float(u.gpu)
            values[f"{self.device}.util_mem_pct"] = float(u.memory)
        except Exception as exc:
            self.note_error("utilization", exc)
        throttle = None
        try:
            bits = int(self._reasons_fn(self.handle))
            throttle = {"source": "nvml", "reasons": bits, "active": reason_names(bits)}
        except Exception as exc:
            self.note_error("clock_event_reasons", exc)
        return Reading(values, throttle)

    def info(self) -> dict[str, Any]:
        d = super().info()
        d["limits"] = dict(self.limits)
        return d


class _NvmlSession:
    """nvmlInit is reference counted by the driver; shut down once when the last sensor closes."""

    def __init__(self, nvml):
        self.nvml = nvml
        self.users = 0

    def release(self) -> None:
        self.users -= 1
        if self.users == 0:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass


def probe() -> tuple[list[Sensor], list[Unavailable]]:
    try:
        import pynvml as nvml
    except ImportError:
        return [], [Unavailable("nvml", "pynvml not importable (pip install nvidia-ml-py)")]
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return [], [Unavailable("nvml", f"nvmlInit failed: {type(exc).__name__}: {exc}")]
    try:
        count = nvml.nvmlDeviceGetCount()
    except Exception as exc:
        nvml.nvmlShutdown()
        return [], [Unavailable("nvml", f"nvmlDeviceGetCount failed: {exc}")]
    if count == 0:
        nvml.nvmlShutdown()
        return [], [Unavailable("nvml", "NVML loaded but reports no GPUs")]
    session = _NvmlSession(nvml)
    sensors: list[Sensor] = []
    missing: list[Unavailable] = []
    for i in range(count):
        try:
            s = NvmlSensor(nvml, i, nvml.nvmlDeviceGetHandleByIndex(i))
        except Exception as exc:
            missing.append(Unavailable(f"nvml:{i}", f"cannot open GPU {i}: {exc}"))
            continue
        session.users += 1
        s.close = session.release  # type: ignore[method-assign]
        sensors.append(s)
    if not sensors:
        nvml.nvmlShutdown()
    return sensors, missing
