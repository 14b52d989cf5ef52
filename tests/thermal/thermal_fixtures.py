"""Fake sysfs trees for the thermal tests, and gpu_metrics blobs written with ctypes.

The ctypes structs below are transcribed from the kernel's kgd_pp_interface.h; ctypes lays
them out with the platform C rules on its own, so they are an independent check of the
offsets that ds4kit.thermal.gpu_metrics_layouts derives from its field lists.
"""
from __future__ import annotations

import ctypes as C
import os
from pathlib import Path

u8, u16, u32, u64 = C.c_uint8, C.c_uint16, C.c_uint32, C.c_uint64


class Header(C.Structure):
    _fields_ = [("structure_size", u16), ("format_revision", u8), ("content_revision", u8)]


class V1_0(C.Structure):
    _fields_ = [("common_header", Header), ("system_clock_counter", u64),
                ("temperature_edge", u16), ("temperature_hotspot", u16), ("temperature_mem", u16),
                ("temperature_vrgfx", u16), ("temperature_vrsoc", u16), ("temperature_vrmem", u16),
                ("average_gfx_activity", u16), ("average_umc_activity", u16), ("average_mm_activity", u16),
                ("average_socket_power", u16), ("energy_accumulator", u32),
                ("average_gfxclk_frequency", u16), ("average_socclk_frequency", u16), ("average_uclk_frequency", u16),
                ("average_vclk0_frequency", u16), ("average_dclk0_frequency", u16), ("average_vclk1_frequency", u16),
                ("average_dclk1_frequency", u16),
                ("current_gfxclk", u16), ("current_socclk", u16), ("current_uclk", u16), ("current_vclk0", u16),
                ("current_dclk0", u16), ("current_vclk1", u16), ("current_dclk1", u16),
                ("throttle_status", u32), ("current_fan_speed", u16), ("pcie_link_width", u8), ("pcie_link_speed", u8)]


# The v1.1+ prefix shared by V1_3 and the remaining v1 layouts (transcribed from the same header).
def _v1_common(with_hbm_ts: bool):
    f = [("common_header", Header),
         ("temperature_edge", u16), ("temperature_hotspot", u16), ("temperature_mem", u16),
         ("temperature_vrgfx", u16), ("temperature_vrsoc", u16), ("temperature_vrmem", u16),
         ("average_gfx_activity", u16), ("average_umc_activity", u16), ("average_mm_activity", u16),
         ("average_socket_power", u16), ("energy_accumulator", u64), ("system_clock_counter", u64),
         ("average_gfxclk_frequency", u16), ("average_socclk_frequency", u16), ("average_uclk_frequency", u16),
         ("average_vclk0_frequency", u16), ("average_dclk0_frequency", u16), ("average_vclk1_frequency", u16),
         ("average_dclk1_frequency", u16),
         ("current_gfxclk", u16), ("current_socclk", u16), ("current_uclk", u16), ("current_vclk0", u16),
         ("current_dclk0", u16), ("current_vclk1", u16), ("current_dclk1", u16),
         ("throttle_status", u32), ("current_fan_speed", u16), ("pcie_link_width", u16),
         ("pcie_link_speed", u16), ("padding", u16), ("gfx_activity_acc", u32), ("mem_activity_acc", u32),
         ("temperature_hbm", u16 * 4)]
    return f + ([("firmware_timestamp", u64)] if with_hbm_ts else [])


class V1_3(C.Structure):
    _fields_ = _v1_common(with_hbm_ts=True) + [
        ("voltage_soc", u16), ("voltage_gfx", u16), ("voltage_mem", u16), ("padding1", u16),
        ("indep_throttle_status", u64)]


class V2_2(C.Structure):
    _fields_ = [("common_header", Header),
                ("temperature_gfx", u16), ("temperature_soc", u16), ("temperature_core", u16 * 8),
                ("temperature_l3", u16 * 2), ("average_gfx_activity", u16), ("average_mm_activity", u16),
                ("system_clock_counter", u64),
                ("average_socket_power", u16), ("average_cpu_power", u16), ("average_soc_power", u16),
                ("average_gfx_power", u16), ("average_core_power", u16 * 8),
                ("average_gfxclk_frequency", u16), ("average_socclk_frequency", u16), ("average_uclk_frequency", u16),
                ("average_fclk_frequency", u16), ("average_vclk_frequency", u16), ("average_dclk_frequency", u16),
                ("current_gfxclk", u16), ("current_socclk", u16), ("current_uclk", u16), ("current_fclk", u16),
                ("current_vclk", u16), ("current_dclk", u16), ("current_coreclk", u16 * 8), ("current_l3clk", u16 * 2),
                ("throttle_status", u32), ("fan_pwm", u16), ("padding", u16 * 3), ("indep_throttle_status", u64)]


def _v3_fields(ipu_bw: bool):
    return [("common_header", Header),
            ("temperature_gfx", u16), ("temperature_soc", u16), ("temperature_core", u16 * 16),
            ("temperature_skin", u16), ("average_gfx_activity", u16), ("average_vcn_activity", u16),
            ("average_ipu_activity", u16 * 8), ("average_core_c0_activity", u16 * 16),
            ("average_dram_reads", u16), ("average_dram_writes", u16)] + (
        [("average_ipu_reads", u16), ("average_ipu_writes", u16)] if ipu_bw else []) + [
            ("system_clock_counter", u64), ("average_socket_power", u32), ("average_ipu_power", u16),
            ("average_apu_power", u32), ("average_gfx_power", u32), ("average_dgpu_power", u32),
            ("average_all_core_power", u32), ("average_core_power", u16 * 16), ("average_sys_power", u16),
            ("stapm_power_limit", u16), ("current_stapm_power_limit", u16),
            ("average_gfxclk_frequency", u16), ("average_socclk_frequency", u16), ("average_vpeclk_frequency", u16),
            ("average_ipuclk_frequency", u16), ("average_fclk_frequency", u16), ("average_vclk_frequency", u16),
            ("average_uclk_frequency", u16), ("average_mpipu_frequency", u16),
            ("current_coreclk", u16 * 16), ("current_core_maxfreq", u16), ("current_gfx_maxfreq", u16),
            ("throttle_residency_prochot", u32), ("throttle_residency_spl", u32), ("throttle_residency_fppt", u32),
            ("throttle_residency_sppt", u32), ("throttle_residency_thm_core", u32),
            ("throttle_residency_thm_gfx", u32), ("throttle_residency_thm_soc", u32),
            ("time_filter_alphavalue", u32)]


class V3_0(C.Structure):
    _fields_ = _v3_fields(True)


class V3_0Early(C.Structure):
    _fields_ = _v3_fields(False)


REVISION = {V1_0: (1, 0), V1_3: (1, 3), V2_2: (2, 2), V3_0: (3, 0), V3_0Early: (3, 0)}


# The remaining layouts, for the offset check only.
class V1_1(C.Structure):
    _fields_ = _v1_common(False)


class V1_2(C.Structure):
    _fields_ = _v1_common(True)


def _mi300(jpeg: bool, residency: bool, nak: bool):
    f = [("common_header", Header), ("temperature_hotspot", u16), ("temperature_mem", u16),
         ("temperature_vrsoc", u16), ("curr_socket_power", u16), ("average_gfx_activity", u16),
         ("average_umc_activity", u16), ("vcn_activity", u16 * 4)]
    if jpeg:
        f += [("jpeg_activity", u16 * 32)]
    f += [("energy_accumulator", u64), ("system_clock_counter", u64)]
    if residency:
        f += [("accumulation_counter", u32), ("prochot_residency_acc", u32), ("ppt_residency_acc", u32),
              ("socket_thm_residency_acc", u32), ("vr_thm_residency_acc", u32), ("hbm_thm_residency_acc", u32)]
    f += [("throttle_status", u32), ("gfxclk_lock_status", u32), ("pcie_link_width", u16), ("pcie_link_speed", u16),
          ("xgmi_link_width", u16), ("xgmi_link_speed", u16), ("gfx_activity_acc", u32), ("mem_activity_acc", u32),
          ("pcie_bandwidth_acc", u64), ("pcie_bandwidth_inst", u64), ("pcie_l0_to_recov_count_acc", u64),
          ("pcie_replay_count_acc", u64), ("pcie_replay_rover_count_acc", u64)]
    if nak:
        f += [("pcie_nak_sent_count_acc", u32), ("pcie_nak_rcvd_count_acc", u32)]
    f += [("xgmi_read_data_acc", u64 * 8), ("xgmi_write_data_acc", u64 * 8), ("firmware_timestamp", u64),
          ("current_gfxclk", u16 * 8), ("current_socclk", u16 * 4), ("current_vclk0", u16 * 4),
          ("current_dclk0", u16 * 4), ("current_uclk", u16), ("padding", u16)]
    return f


class V1_4(C.Structure):
    _fields_ = _mi300(jpeg=False, residency=False, nak=False)


class V1_5(C.Structure):
    _fields_ = _mi300(jpeg=True, residency=False, nak=True)


class V1_6(C.Structure):
    _fields_ = _mi300(jpeg=True, residency=True, nak=True)


def _v2(first_counter: bool, pad: int, indep: bool, avg_temps: bool, volt_curr: bool):
    f = [("common_header", Header)] + ([("system_clock_counter", u64)] if first_counter else []) + [
        ("temperature_gfx", u16), ("temperature_soc", u16), ("temperature_core", u16 * 8), ("temperature_l3", u16 * 2),
        ("average_gfx_activity", u16), ("average_mm_activity", u16)]
    if not first_counter:
        f += [("system_clock_counter", u64)]
    f += [("average_socket_power", u16), ("average_cpu_power", u16), ("average_soc_power", u16),
          ("average_gfx_power", u16), ("average_core_power", u16 * 8),
          ("average_gfxclk_frequency", u16), ("average_socclk_frequency", u16), ("average_uclk_frequency", u16),
          ("average_fclk_frequency", u16), ("average_vclk_frequency", u16), ("average_dclk_frequency", u16),
          ("current_gfxclk", u16), ("current_socclk", u16), ("current_uclk", u16), ("current_fclk", u16),
          ("current_vclk", u16), ("current_dclk", u16), ("current_coreclk", u16 * 8), ("current_l3clk", u16 * 2),
          ("throttle_status", u32), ("fan_pwm", u16), ("padding", u16 * pad if pad > 1 else u16)]
    if indep:
        f += [("indep_throttle_status", u64)]
    if avg_temps:
        f += [("average_temperature_gfx", u16), ("average_temperature_soc", u16),
              ("average_temperature_core", u16 * 8), ("average_temperature_l3", u16 * 2)]
    if volt_curr:
        f += [("average_cpu_voltage", u16), ("average_soc_voltage", u16), ("average_gfx_voltage", u16),
              ("average_cpu_current", u16), ("average_soc_current", u16), ("average_gfx_current", u16)]
    return f


class V2_0(C.Structure):
    _fields_ = _v2(True, 1, False, False, False)


class V2_1(C.Structure):
    _fields_ = _v2(False, 3, False, False, False)


class V2_3(C.Structure):
    _fields_ = _v2(False, 3, True, True, False)


class V2_4(C.Structure):
    _fields_ = _v2(False, 3, True, True, True)


REVISION.update({V1_1: (1, 1), V1_2: (1, 2), V1_4: (1, 4), V1_5: (1, 5), V1_6: (1, 6),
                 V2_0: (2, 0), V2_1: (2, 1), V2_3: (2, 3), V2_4: (2, 4)})


def blob(cls, **values) -> bytes:
    """A gpu_metrics blob: every field all-ones (what the kernel pre-fills), then the given values."""
    s = cls()
    C.memset(C.addressof(s), 0xFF, C.sizeof(s))
    s.common_header.structure_size = C.sizeof(s)
    s.common_header.format_revision, s.common_header.content_revision = REVISION[cls]
    for k, v in values.items():
        if isinstance(v, (list, tuple)):
            arr = getattr(s, k)
            for i, x in enumerate(v):
                arr[i] = x
        else:
            setattr(s, k, v)
    return bytes(s)


def write_atomic(path: Path, data: bytes | str) -> None:
    """Replace a sysfs file in one step, as the kernel shows a value (readers never see half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data if isinstance(data, bytes) else data.encode())
    os.replace(tmp, path)


class FakeSysfs:
    def __init__(self, root: Path):
        self.root = Path(root)

    def card(self, name: str, gpu_metrics: bytes | None = None, vendor: str = "0x1002") -> Path:
        dev = self.root / "sys/class/drm" / name / "device"
        dev.mkdir(parents=True, exist_ok=True)
        (dev / "vendor").write_text(vendor + "\n")
        if gpu_metrics is not None:
            write_atomic(dev / "gpu_metrics", gpu_metrics)
        return dev

    def hwmon(self, index: int, chip: str, files: dict[str, str | int]) -> Path:
        d = self.root / "sys/class/hwmon" / f"hwmon{index}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "name").write_text(chip + "\n")
        for name, value in files.items():
            write_atomic(d / name, f"{value}\n")
        return d
