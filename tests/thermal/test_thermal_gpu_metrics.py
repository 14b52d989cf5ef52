import ctypes
import struct

import pytest

from ds4kit.thermal.gpu_metrics import GpuMetricsError, decode
from ds4kit.thermal.gpu_metrics_layouts import LAYOUTS, layout_offsets
from thermal_fixtures import (V1_0, V1_1, V1_2, V1_3, V1_4, V1_5, V1_6, V2_0, V2_1, V2_2, V2_3, V2_4, V3_0,
                              V3_0Early, blob)

# V3_0Early is the struct before the kernel inserted average_ipu_reads/writes: the same
# v3.0 layout must read it (the new fields sat in padding).
CASES = [(V1_0, "v1.0"), (V1_1, "v1.1"), (V1_2, "v1.2"), (V1_3, "v1.3"), (V1_4, "v1.4"), (V1_5, "v1.5"),
         (V1_6, "v1.6"), (V2_0, "v2.0"), (V2_1, "v2.1"), (V2_2, "v2.2"), (V2_3, "v2.3"), (V2_4, "v2.4"),
         (V3_0, "v3.0"), (V3_0Early, "v3.0")]


def _layout(name):
    return next(lay for lays in LAYOUTS.values() for lay in lays if lay.name == name)


@pytest.mark.parametrize("cls,name", CASES, ids=[c[1] for c in CASES[:-1]] + ["v3.0-early"])
def test_offsets_and_size_match_ctypes(cls, name):
    offsets, size = layout_offsets(_layout(name).fields)
    assert size == ctypes.sizeof(cls)
    for field_name, _ in cls._fields_:
        if field_name == "common_header":
            continue
        assert offsets[field_name][0] == getattr(cls, field_name).offset, field_name


def test_every_kernel_layout_is_covered():
    assert {lay.name for lays in LAYOUTS.values() for lay in lays} == {name for _, name in CASES}


def test_v1_6_mi300_first_xcc_clock_and_watts():
    b = blob(V1_6, temperature_hotspot=71, curr_socket_power=540, current_gfxclk=[2100, 2000] + [0xFFFF] * 6,
             average_gfx_activity=100, throttle_status=2)
    m = decode(b)
    assert m.layout == "v1.6"
    assert m.temperatures_c == {"hotspot": 71} and m.power_w == {"curr_socket_power": 540}
    assert m.clocks_mhz == {"current_gfxclk": 2100}


def test_v2_4_centi_activity():
    m = decode(blob(V2_4, temperature_gfx=5012, average_gfx_activity=4550, average_socket_power=15000))
    assert m.activity_pct["average_gfx_activity"] == pytest.approx(45.5)
    assert m.temperatures_c["gfx"] == pytest.approx(50.12) and m.power_w["average_socket_power"] == 15.0


def test_v1_0_dgpu_values_and_padding():
    # v1.0 has a u64 right after the 4-byte header: the 4 padding bytes must be skipped.
    b = blob(V1_0, system_clock_counter=123, temperature_edge=61, temperature_hotspot=77, temperature_mem=70,
             average_socket_power=215, average_gfxclk_frequency=2410, average_gfx_activity=99, throttle_status=0x5)
    m = decode(b)
    assert m.layout == "v1.0"
    assert m.temperatures_c == {"edge": 61, "hotspot": 77, "mem": 70}  # the others are all-ones: N/A
    assert m.power_w == {"average_socket_power": 215}
    assert m.clocks_mhz["average_gfxclk_frequency"] == 2410
    assert m.activity_pct["average_gfx_activity"] == 99
    assert m.throttle_status == 5 and m.indep_throttle_status is None


def test_v1_3_indep_throttle_bits():
    b = blob(V1_3, temperature_hotspot=95, temperature_hbm=[80, 81, 0xFFFF, 82],
             indep_throttle_status=(1 << 36) | (1 << 4))
    m = decode(b)
    assert m.temperatures_c["hotspot"] == 95
    assert m.temperatures_c["hbm0"] == 80 and m.temperatures_c["hbm3"] == 82 and "hbm2" not in m.temperatures_c
    assert m.indep_throttle_names() == ["SPL", "TEMP_HOTSPOT"]


def test_v2_2_apu_units():
    # APU tables carry centi-Celsius and milliwatts.
    b = blob(V2_2, temperature_gfx=6550, temperature_soc=5925, temperature_core=[6000] * 8,
             average_socket_power=45123, average_gfxclk_frequency=2900, average_gfx_activity=87,
             indep_throttle_status=1 << 32)
    m = decode(b)
    assert m.temperatures_c["gfx"] == pytest.approx(65.5)
    assert m.temperatures_c["soc"] == pytest.approx(59.25)
    assert m.temperatures_c["core7"] == pytest.approx(60.0)
    assert m.power_w["average_socket_power"] == pytest.approx(45.123)
    assert m.clocks_mhz["average_gfxclk_frequency"] == 2900
    assert m.indep_throttle_names() == ["TEMP_GPU"]


@pytest.mark.parametrize("cls", [V3_0, V3_0Early])
def test_v3_0_strix_values_and_residency(cls):
    b = blob(cls, temperature_gfx=7125, temperature_skin=4100, average_socket_power=98765,
             average_gfx_power=70000, average_gfxclk_frequency=2800, current_gfx_maxfreq=2900,
             average_gfx_activity=100, throttle_residency_thm_gfx=42, throttle_residency_spl=0,
             time_filter_alphavalue=7)
    m = decode(b)
    assert m.layout == "v3.0" and m.note is None
    assert m.temperatures_c["gfx"] == pytest.approx(71.25)
    assert m.temperatures_c["skin"] == pytest.approx(41.0)
    assert m.power_w["average_socket_power"] == pytest.approx(98.765)
    assert m.power_w["average_gfx_power"] == pytest.approx(70.0)
    assert m.clocks_mhz == {"average_gfxclk_frequency": 2800, "current_gfx_maxfreq": 2900}
    assert m.throttle_residency["thm_gfx"] == 42 and m.throttle_residency["spl"] == 0
    assert m.throttle_status is None and m.indep_throttle_status is None


def test_larger_blob_decodes_known_prefix_and_says_so():
    b = bytearray(blob(V2_2, temperature_gfx=5000))
    b += b"\xff" * 16
    struct.pack_into("<H", b, 0, len(b))
    m = decode(bytes(b))
    assert m.temperatures_c["gfx"] == 50.0
    assert m.note and "differs" in m.note


@pytest.mark.parametrize("data,needle", [
    (b"\x01\x00", "shorter than its 4-byte header"),
    (struct.pack("<HBB", 200, 9, 1) + bytes(196), "v9.1 is not one this decoder knows"),
    (struct.pack("<HBB", 500, 2, 2) + bytes(20), "only 24 were read"),
    (struct.pack("<HBB", 40, 2, 2) + bytes(36), "the layout needs"),
])
def test_bad_blobs_raise_clear_errors(data, needle):
    with pytest.raises(GpuMetricsError, match=needle):
        decode(data)
