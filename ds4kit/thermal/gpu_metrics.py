"""Decode the binary ``/sys/class/drm/card*/device/gpu_metrics`` blob (the way amdgpu_top does).

The first 4 bytes are a header (structure_size u16, format_revision u8, content_revision
u8); the rest is one of the structs in gpu_metrics_layouts. Fields the firmware does not
fill are all ones (the kernel pre-fills the table with 0xFF), and come back as None.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ds4kit.thermal.gpu_metrics_layouts import LAYOUTS, Layout, layout_offsets

_FMT = {"u8": "B", "u16": "H", "u32": "I", "u64": "Q"}
_ALL_ONES = {"u8": 0xFF, "u16": 0xFFFF, "u32": 0xFFFFFFFF, "u64": 0xFFFFFFFFFFFFFFFF}

# ASIC-independent throttler bits (kernel amdgpu_smu.h, SMU_THROTTLER_*_BIT).
INDEP_THROTTLE_BITS = {
    0: "PPT0", 1: "PPT1", 2: "PPT2", 3: "PPT3", 4: "SPL", 5: "FPPT", 6: "SPPT", 7: "SPPT_APU",
    16: "TDC_GFX", 17: "TDC_SOC", 18: "TDC_MEM", 19: "TDC_VDD", 20: "TDC_CVIP", 21: "EDC_CPU",
    22: "EDC_GFX", 23: "APCC",
    32: "TEMP_GPU", 33: "TEMP_CORE", 34: "TEMP_MEM", 35: "TEMP_EDGE", 36: "TEMP_HOTSPOT",
    37: "TEMP_SOC", 38: "TEMP_VR_GFX", 39: "TEMP_VR_SOC", 40: "TEMP_VR_MEM0", 41: "TEMP_VR_MEM1",
    42: "TEMP_LIQUID0", 43: "TEMP_LIQUID1", 44: "VRHOT0", 45: "VRHOT1", 46: "PROCHOT_CPU",
    47: "PROCHOT_GFX", 56: "PPM", 57: "FIT",
}

_POWER_FIELDS = ("average_socket_power", "curr_socket_power", "average_cpu_power", "average_soc_power",
                 "average_gfx_power", "average_apu_power", "average_dgpu_power", "average_all_core_power",
                 "average_sys_power")
_CLOCK_FIELDS = ("average_gfxclk_frequency", "average_socclk_frequency", "average_uclk_frequency",
                 "average_fclk_frequency", "current_gfxclk", "current_uclk", "current_gfx_maxfreq")
_ACTIVITY_FIELDS = ("average_gfx_activity", "average_umc_activity")


class GpuMetricsError(ValueError):
    """The blob is too short, has an unknown revision, or contradicts its own header."""


@dataclass
class GpuMetrics:
    layout: str
    structure_size: int
    temperatures_c: dict[str, float] = field(default_factory=dict)
    power_w: dict[str, float] = field(default_factory=dict)
    clocks_mhz: dict[str, float] = field(default_factory=dict)
    activity_pct: dict[str, float] = field(default_factory=dict)
    throttle_status: int | None = None        # ASIC dependent bits
    indep_throttle_status: int | None = None  # SMU_THROTTLER_* bits
    throttle_residency: dict[str, int] = field(default_factory=dict)  # v3: per-limiter counters
    note: str | None = None

    def indep_throttle_names(self) -> list[str]:
        bits = self.indep_throttle_status or 0
        return [INDEP_THROTTLE_BITS.get(b, f"bit{b}") for b in range(64) if bits >> b & 1]


def read_header(blob: bytes) -> tuple[int, int, int]:
    if len(blob) < 4:
        raise GpuMetricsError(f"gpu_metrics blob is {len(blob)} bytes, shorter than its 4-byte header")
    return struct.unpack_from("<HBB", blob, 0)


def _choose_layout(blob: bytes, size: int, fmt: int, content: int) -> tuple[Layout, dict, str | None]:
    candidates = LAYOUTS.get((fmt, content))
    if not candidates:
        known = ", ".join(f"v{f}.{c}" for f, c in sorted(LAYOUTS))
        raise GpuMetricsError(f"gpu_metrics format v{fmt}.{content} is not one this decoder knows ({known})")
    sized = [(lay, *layout_offsets(lay.fields)) for lay in candidates]
    for lay, offsets, need in sized:
        if need == size:
            return lay, offsets, None
    # A newer kernel may have appended fields without a revision bump: use the largest
    # known layout that fits, and say so.
    fitting = [s for s in sized if s[2] <= min(size, len(blob))]
    if not fitting:
        needs = "/".join(str(s[2]) for s in sized)
        raise GpuMetricsError(
            f"gpu_metrics v{fmt}.{content} header says {size} bytes (blob {len(blob)}); the layout needs {needs}")
    lay, offsets, need = max(fitting, key=lambda s: s[2])
    return lay, offsets, f"header size {size} differs from the {lay.name} layout ({need} bytes); decoded the known prefix"


def _values(blob: bytes, offsets: dict, name: str) -> list[int | None]:
    if name not in offsets:
        return []
    off, ctype, count = offsets[name]
    raw = struct.unpack_from("<" + _FMT[ctype] * count, blob, off)
    return [None if v == _ALL_ONES[ctype] else v for v in raw]


def _put(out: dict, name: str, values: list, scale: float) -> None:
    for i, v in enumerate(values):
        if v is None:
            continue
        key = name if len(values) == 1 else f"{name}{i}"
        out[key] = round(v * scale, 3)


def decode(blob: bytes) -> GpuMetrics:
    size, fmt, content = read_header(blob)
    if size > len(blob):
        raise GpuMetricsError(f"gpu_metrics header says {size} bytes but only {len(blob)} were read")
    layout, offsets, note = _choose_layout(blob, size, fmt, content)
    m = GpuMetrics(layout=layout.name, structure_size=size, note=note)
    for name, (_, _, _) in offsets.items():
        if name.startswith("temperature_"):
            _put(m.temperatures_c, name[len("temperature_"):], _values(blob, offsets, name), layout.temp_scale)
    for name in _POWER_FIELDS:
        _put(m.power_w, name, _values(blob, offsets, name), layout.power_scale)
    for name in _CLOCK_FIELDS:
        vals = _values(blob, offsets, name)
        # v1.4+ report one gfx clock per XCC; the first stands for the device.
        _put(m.clocks_mhz, name, vals[:1], 1.0)
    for name in _ACTIVITY_FIELDS:
        _put(m.activity_pct, name, _values(blob, offsets, name), layout.activity_scale)
    for name, attr in (("throttle_status", "throttle_status"), ("indep_throttle_status", "indep_throttle_status")):
        vals = _values(blob, offsets, name)
        if vals:
            setattr(m, attr, vals[0])
    for name in offsets:
        if name.startswith("throttle_residency_"):
            v = _values(blob, offsets, name)[0]
            if v is not None:
                m.throttle_residency[name[len("throttle_residency_"):]] = v
    return m
