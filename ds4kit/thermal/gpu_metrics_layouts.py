"""Field lists of the amdgpu ``gpu_metrics`` structs (kernel: include/kgd_pp_interface.h).

Each layout is the struct's fields in order as (name, C type, array length). Offsets
are not written down: ``layout_offsets`` derives them with the C rules the kernel is
compiled with (every field aligned to its own size, the struct padded to its largest
member), so a layout here is checked against the header by reading, not by arithmetic.
The kernel keys a blob by (format_revision, content_revision) in its 4-byte header.
"""
from __future__ import annotations

from dataclasses import dataclass

Field = tuple[str, str, int]

HEADER: list[Field] = [("structure_size", "u16", 1), ("format_revision", "u8", 1), ("content_revision", "u8", 1)]

_V1_TEMPS = [("temperature_edge", "u16", 1), ("temperature_hotspot", "u16", 1), ("temperature_mem", "u16", 1),
             ("temperature_vrgfx", "u16", 1), ("temperature_vrsoc", "u16", 1), ("temperature_vrmem", "u16", 1)]
_V1_UTIL = [("average_gfx_activity", "u16", 1), ("average_umc_activity", "u16", 1), ("average_mm_activity", "u16", 1)]
_V1_AVG_CLOCKS = [("average_gfxclk_frequency", "u16", 1), ("average_socclk_frequency", "u16", 1),
                  ("average_uclk_frequency", "u16", 1), ("average_vclk0_frequency", "u16", 1),
                  ("average_dclk0_frequency", "u16", 1), ("average_vclk1_frequency", "u16", 1),
                  ("average_dclk1_frequency", "u16", 1)]
_V1_CUR_CLOCKS = [("current_gfxclk", "u16", 1), ("current_socclk", "u16", 1), ("current_uclk", "u16", 1),
                  ("current_vclk0", "u16", 1), ("current_dclk0", "u16", 1), ("current_vclk1", "u16", 1),
                  ("current_dclk1", "u16", 1)]

V1_0: list[Field] = HEADER + [("system_clock_counter", "u64", 1)] + _V1_TEMPS + _V1_UTIL + [
    ("average_socket_power", "u16", 1), ("energy_accumulator", "u32", 1)] + _V1_AVG_CLOCKS + _V1_CUR_CLOCKS + [
    ("throttle_status", "u32", 1), ("current_fan_speed", "u16", 1),
    ("pcie_link_width", "u8", 1), ("pcie_link_speed", "u8", 1)]

V1_1: list[Field] = HEADER + _V1_TEMPS + _V1_UTIL + [
    ("average_socket_power", "u16", 1), ("energy_accumulator", "u64", 1), ("system_clock_counter", "u64", 1)
] + _V1_AVG_CLOCKS + _V1_CUR_CLOCKS + [
    ("throttle_status", "u32", 1), ("current_fan_speed", "u16", 1), ("pcie_link_width", "u16", 1),
    ("pcie_link_speed", "u16", 1), ("padding", "u16", 1), ("gfx_activity_acc", "u32", 1),
    ("mem_activity_acc", "u32", 1), ("temperature_hbm", "u16", 4)]

V1_2: list[Field] = V1_1 + [("firmware_timestamp", "u64", 1)]

V1_3: list[Field] = V1_2 + [("voltage_soc", "u16", 1), ("voltage_gfx", "u16", 1), ("voltage_mem", "u16", 1),
                            ("padding1", "u16", 1), ("indep_throttle_status", "u64", 1)]

# v1.4 .. v1.6: the datacenter (MI300-class) layout; temperatures in C, power in W.
_V1_4_HEAD = HEADER + [("temperature_hotspot", "u16", 1), ("temperature_mem", "u16", 1),
                       ("temperature_vrsoc", "u16", 1), ("curr_socket_power", "u16", 1),
                       ("average_gfx_activity", "u16", 1), ("average_umc_activity", "u16", 1),
                       ("vcn_activity", "u16", 4)]
_V1_4_LINK = [("pcie_link_width", "u16", 1), ("pcie_link_speed", "u16", 1), ("xgmi_link_width", "u16", 1),
              ("xgmi_link_speed", "u16", 1), ("gfx_activity_acc", "u32", 1), ("mem_activity_acc", "u32", 1),
              ("pcie_bandwidth_acc", "u64", 1), ("pcie_bandwidth_inst", "u64", 1),
              ("pcie_l0_to_recov_count_acc", "u64", 1), ("pcie_replay_count_acc", "u64", 1),
              ("pcie_replay_rover_count_acc", "u64", 1)]
_V1_4_TAIL = [("xgmi_read_data_acc", "u64", 8), ("xgmi_write_data_acc", "u64", 8), ("firmware_timestamp", "u64", 1),
              ("current_gfxclk", "u16", 8), ("current_socclk", "u16", 4), ("current_vclk0", "u16", 4),
              ("current_dclk0", "u16", 4), ("current_uclk", "u16", 1), ("padding", "u16", 1)]
_NAK = [("pcie_nak_sent_count_acc", "u32", 1), ("pcie_nak_rcvd_count_acc", "u32", 1)]
_V1_4_COUNTERS = [("energy_accumulator", "u64", 1), ("system_clock_counter", "u64", 1)]
_V1_4_STATUS = [("throttle_status", "u32", 1), ("gfxclk_lock_status", "u32", 1)]

V1_4: list[Field] = _V1_4_HEAD + _V1_4_COUNTERS + _V1_4_STATUS + _V1_4_LINK + _V1_4_TAIL
V1_5: list[Field] = _V1_4_HEAD + [("jpeg_activity", "u16", 32)] + _V1_4_COUNTERS + _V1_4_STATUS + _V1_4_LINK + _NAK + _V1_4_TAIL
V1_6: list[Field] = _V1_4_HEAD + [("jpeg_activity", "u16", 32)] + _V1_4_COUNTERS + [
    ("accumulation_counter", "u32", 1), ("prochot_residency_acc", "u32", 1), ("ppt_residency_acc", "u32", 1),
    ("socket_thm_residency_acc", "u32", 1), ("vr_thm_residency_acc", "u32", 1), ("hbm_thm_residency_acc", "u32", 1),
] + _V1_4_STATUS + _V1_4_LINK + _NAK + _V1_4_TAIL

# v2.x: APUs (Renoir, Van Gogh, Rembrandt, Phoenix ...); temperatures in centi-C, power in mW.
_V2_TEMPS = [("temperature_gfx", "u16", 1), ("temperature_soc", "u16", 1), ("temperature_core", "u16", 8),
             ("temperature_l3", "u16", 2)]
_V2_UTIL = [("average_gfx_activity", "u16", 1), ("average_mm_activity", "u16", 1)]
_V2_POWER = [("average_socket_power", "u16", 1), ("average_cpu_power", "u16", 1), ("average_soc_power", "u16", 1),
             ("average_gfx_power", "u16", 1), ("average_core_power", "u16", 8)]
_V2_CLOCKS = [("average_gfxclk_frequency", "u16", 1), ("average_socclk_frequency", "u16", 1),
              ("average_uclk_frequency", "u16", 1), ("average_fclk_frequency", "u16", 1),
              ("average_vclk_frequency", "u16", 1), ("average_dclk_frequency", "u16", 1),
              ("current_gfxclk", "u16", 1), ("current_socclk", "u16", 1), ("current_uclk", "u16", 1),
              ("current_fclk", "u16", 1), ("current_vclk", "u16", 1), ("current_dclk", "u16", 1),
              ("current_coreclk", "u16", 8), ("current_l3clk", "u16", 2)]

V2_0: list[Field] = HEADER + [("system_clock_counter", "u64", 1)] + _V2_TEMPS + _V2_UTIL + _V2_POWER + _V2_CLOCKS + [
    ("throttle_status", "u32", 1), ("fan_pwm", "u16", 1), ("padding", "u16", 1)]
V2_1: list[Field] = HEADER + _V2_TEMPS + _V2_UTIL + [("system_clock_counter", "u64", 1)] + _V2_POWER + _V2_CLOCKS + [
    ("throttle_status", "u32", 1), ("fan_pwm", "u16", 1), ("padding", "u16", 3)]
V2_2: list[Field] = V2_1 + [("indep_throttle_status", "u64", 1)]
V2_3: list[Field] = V2_2 + [("average_temperature_gfx", "u16", 1), ("average_temperature_soc", "u16", 1),
                            ("average_temperature_core", "u16", 8), ("average_temperature_l3", "u16", 2)]
V2_4: list[Field] = V2_3 + [("average_cpu_voltage", "u16", 1), ("average_soc_voltage", "u16", 1),
                            ("average_gfx_voltage", "u16", 1), ("average_cpu_current", "u16", 1),
                            ("average_soc_current", "u16", 1), ("average_gfx_current", "u16", 1)]

# v3.0: Strix Point / Strix Halo (SMU 14). The kernel later inserted average_ipu_reads/
# writes without a revision bump; they fill what was alignment padding before the u64, so
# every other offset and the size are unchanged and this one layout reads both.
V3_0: list[Field] = HEADER + [
    ("temperature_gfx", "u16", 1), ("temperature_soc", "u16", 1), ("temperature_core", "u16", 16),
    ("temperature_skin", "u16", 1), ("average_gfx_activity", "u16", 1), ("average_vcn_activity", "u16", 1),
    ("average_ipu_activity", "u16", 8), ("average_core_c0_activity", "u16", 16),
    ("average_dram_reads", "u16", 1), ("average_dram_writes", "u16", 1),
    ("average_ipu_reads", "u16", 1), ("average_ipu_writes", "u16", 1),
    ("system_clock_counter", "u64", 1), ("average_socket_power", "u32", 1), ("average_ipu_power", "u16", 1),
    ("average_apu_power", "u32", 1), ("average_gfx_power", "u32", 1), ("average_dgpu_power", "u32", 1),
    ("average_all_core_power", "u32", 1), ("average_core_power", "u16", 16), ("average_sys_power", "u16", 1),
    ("stapm_power_limit", "u16", 1), ("current_stapm_power_limit", "u16", 1),
    ("average_gfxclk_frequency", "u16", 1), ("average_socclk_frequency", "u16", 1),
    ("average_vpeclk_frequency", "u16", 1), ("average_ipuclk_frequency", "u16", 1),
    ("average_fclk_frequency", "u16", 1), ("average_vclk_frequency", "u16", 1),
    ("average_uclk_frequency", "u16", 1), ("average_mpipu_frequency", "u16", 1),
    ("current_coreclk", "u16", 16), ("current_core_maxfreq", "u16", 1), ("current_gfx_maxfreq", "u16", 1),
    ("throttle_residency_prochot", "u32", 1), ("throttle_residency_spl", "u32", 1),
    ("throttle_residency_fppt", "u32", 1), ("throttle_residency_sppt", "u32", 1),
    ("throttle_residency_thm_core", "u32", 1), ("throttle_residency_thm_gfx", "u32", 1),
    ("throttle_residency_thm_soc", "u32", 1), ("time_filter_alphavalue", "u32", 1),
]

_SIZES = {"u8": 1, "u16": 2, "u32": 4, "u64": 8}


@dataclass(frozen=True)
class Layout:
    name: str
    fields: list[Field]
    temp_scale: float    # raw -> degrees C
    power_scale: float   # raw -> W
    activity_scale: float  # raw -> percent


def layout_offsets(fields: list[Field]) -> tuple[dict[str, tuple[int, str, int]], int]:
    """{name: (offset, type, count)} and the struct size, using natural C alignment."""
    offsets: dict[str, tuple[int, str, int]] = {}
    pos, max_align = 0, 1
    for name, ctype, count in fields:
        size = _SIZES[ctype]
        pos = (pos + size - 1) // size * size
        offsets[name] = (pos, ctype, count)
        pos += size * count
        max_align = max(max_align, size)
    return offsets, (pos + max_align - 1) // max_align * max_align


_C, _CENTI = 1.0, 0.01
# (format, content) -> candidate layouts; more than one only where the kernel changed a struct in place.
LAYOUTS: dict[tuple[int, int], list[Layout]] = {
    (1, 0): [Layout("v1.0", V1_0, _C, 1.0, 1.0)],
    (1, 1): [Layout("v1.1", V1_1, _C, 1.0, 1.0)],
    (1, 2): [Layout("v1.2", V1_2, _C, 1.0, 1.0)],
    (1, 3): [Layout("v1.3", V1_3, _C, 1.0, 1.0)],
    (1, 4): [Layout("v1.4", V1_4, _C, 1.0, 1.0)],
    (1, 5): [Layout("v1.5", V1_5, _C, 1.0, 1.0)],
    (1, 6): [Layout("v1.6", V1_6, _C, 1.0, 1.0)],
    (2, 0): [Layout("v2.0", V2_0, _CENTI, 0.001, 1.0)],
    (2, 1): [Layout("v2.1", V2_1, _CENTI, 0.001, 1.0)],
    (2, 2): [Layout("v2.2", V2_2, _CENTI, 0.001, 1.0)],
    (2, 3): [Layout("v2.3", V2_3, _CENTI, 0.001, 1.0)],
    (2, 4): [Layout("v2.4", V2_4, _CENTI, 0.001, 0.01)],
    (3, 0): [Layout("v3.0", V3_0, _CENTI, 0.001, 1.0)],
}
