"""Thermal telemetry: sensors (NVML, amdsmi, amdgpu gpu_metrics and hwmon, k10temp, psutil),
a drift-corrected sampler, a watcher that stops a command before the hardware does, and
throttle detection that does not trust one bit.

``ds4kit thermal watch`` is the command; ``TelemetryRecorder`` lets other commands record
the same telemetry into their own run folders.
"""
from ds4kit.thermal.api import TelemetryRecorder
from ds4kit.thermal.sensors import SOURCES, discover

__all__ = ["SOURCES", "TelemetryRecorder", "discover"]
