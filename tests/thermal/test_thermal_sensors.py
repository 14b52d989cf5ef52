import os
import sys

import pytest

from ds4kit.thermal.sensors import discover, parse_sources
from thermal_fixtures import V2_2, V3_0, FakeSysfs, blob, write_atomic

AMD = ("gpu_metrics", "hwmon-amdgpu", "k10temp")


def _strix_halo_tree(root):
    """An APU the way a Strix Halo box shows it: v3 gpu_metrics, amdgpu hwmon with power1_input, k10temp."""
    fs = FakeSysfs(root)
    fs.card("card1", blob(V3_0, temperature_gfx=6400, average_socket_power=88000, average_gfxclk_frequency=2750,
                          average_gfx_activity=97, throttle_residency_thm_gfx=3))
    fs.card("card0", None, vendor="0x1af4")  # a virtio display: no gpu_metrics
    hw = fs.hwmon(2, "amdgpu", {"temp1_input": 64000, "temp1_label": "edge", "power1_input": 87500000,
                                 "freq1_input": 2750000000, "freq1_label": "sclk"})
    write_atomic(hw / "device" / "gpu_busy_percent", "97\n")
    fs.hwmon(0, "k10temp", {"temp1_input": 71250, "temp1_label": "Tctl", "temp3_input": 69000, "temp3_label": "Tccd1"})
    fs.hwmon(1, "nvme", {"temp1_input": 40000})
    return fs


def test_fake_strix_halo_tree_reads_every_amd_sensor(tmp_path):
    _strix_halo_tree(tmp_path)
    d = discover(tmp_path, AMD)
    names = sorted(s.name for s in d.sensors)
    assert names == ["gpu_metrics:card1", "hwmon-amdgpu:hwmon2", "k10temp:hwmon0"]
    values = {}
    throttle = {}
    for s in d.sensors:
        r = s.read()
        values.update(r.values)
        if r.throttle:
            throttle[s.name] = r.throttle
    assert values["card1.gfx_c"] == pytest.approx(64.0)
    assert values["card1.socket_power_w"] == pytest.approx(88.0)
    assert values["card1.gfxclk_mhz"] == 2750
    assert values["card1.gfx_activity_pct"] == 97
    assert values["hwmon2.edge_c"] == pytest.approx(64.0)
    assert values["hwmon2.power_w"] == pytest.approx(87.5)
    assert values["hwmon2.sclk_mhz"] == pytest.approx(2750.0)
    assert values["hwmon2.gpu_busy_pct"] == 97
    assert values["k10temp.tctl_c"] == pytest.approx(71.25)
    assert values["k10temp.tccd1_c"] == pytest.approx(69.0)
    assert throttle["gpu_metrics:card1"]["residency"]["thm_gfx"] == 3
    reasons = {u.name: u.reason for u in d.unavailable}
    assert "card0/device/gpu_metrics does not exist" in reasons["gpu_metrics:card0"]
    assert any(p == ("hwmon2.sclk_mhz", "hwmon2.gpu_busy_pct") for p in d.clock_load_pairs())


def test_power1_average_preferred_on_older_dgpus(tmp_path):
    FakeSysfs(tmp_path).hwmon(0, "amdgpu", {"power1_average": 150000000, "power1_input": 1})
    (s,) = discover(tmp_path, ("hwmon-amdgpu",)).sensors
    assert s.read().values == {"hwmon0.power_w": 150.0}


def test_empty_tree_gives_a_reason_per_source(tmp_path):
    d = discover(tmp_path, AMD)
    assert d.sensors == []
    reasons = {u.name: u.reason for u in d.unavailable}
    assert "no " in reasons["gpu_metrics"] and "card*" in reasons["gpu_metrics"]
    assert "no hwmon chip named 'amdgpu'" in reasons["hwmon-amdgpu"]
    assert "k10temp" in reasons["k10temp"]
    for name in ("nvml", "amdsmi", "psutil"):
        assert reasons[name] == "not selected (--sensors)"


def test_unreadable_files_are_reasons_not_crashes(tmp_path):
    fs = FakeSysfs(tmp_path)
    dev = fs.card("card0")
    (dev / "gpu_metrics").mkdir()  # reading a directory fails with an OSError, as EACCES would (tests run as root)
    hw = fs.hwmon(3, "amdgpu", {"temp1_input": 50000})
    (hw / "power1_input").mkdir()
    d = discover(tmp_path, AMD)
    reasons = {u.name: u.reason for u in d.unavailable}
    assert "unreadable (IsADirectoryError" in reasons["gpu_metrics:card0"]
    assert "power1_input" in reasons["hwmon-amdgpu:hwmon3"] and "IsADirectoryError" in reasons["hwmon-amdgpu:hwmon3"]
    (s,) = d.sensors
    assert s.read().values == {"hwmon3.temp1_c": 50.0}  # the readable part still works


def test_file_vanishing_or_garbage_mid_run_is_counted(tmp_path):
    hw = FakeSysfs(tmp_path).hwmon(0, "amdgpu", {"temp1_input": 50000, "temp2_input": 60000, "temp2_label": "junction"})
    (s,) = discover(tmp_path, ("hwmon-amdgpu",)).sensors
    (hw / "temp1_input").unlink()
    write_atomic(hw / "temp2_input", "N/A\n")
    assert s.read().values == {}
    assert "FileNotFoundError" in s.read_errors["temp1_input"]
    assert "expected an integer" in s.read_errors["temp2_input"]
    assert s.read_error_count == 2


def test_corrupt_gpu_metrics_is_a_reason(tmp_path):
    FakeSysfs(tmp_path).card("card0", b"\x10\x00\x09\x00" + bytes(12))
    d = discover(tmp_path, ("gpu_metrics",))
    reasons = {u.name: u.reason for u in d.unavailable}
    assert d.sensors == [] and "v9.0 is not one this decoder knows" in reasons["gpu_metrics:card0"]


def test_gpu_metrics_v2_throttle_bits_pass_through(tmp_path):
    FakeSysfs(tmp_path).card("card0", blob(V2_2, temperature_gfx=9000, indep_throttle_status=(1 << 36)))
    (s,) = discover(tmp_path, ("gpu_metrics",)).sensors
    r = s.read()
    assert r.values["card0.gfx_c"] == 90.0
    assert r.throttle["active"] == ["TEMP_HOTSPOT"] and r.throttle["indep"] == 1 << 36


def test_amdsmi_failing_with_keyerror_is_a_reason(tmp_path, monkeypatch):
    # amdsmi's own import raises KeyError when ROCm's library is absent; mimic that module exactly.
    (tmp_path / "amdsmi").mkdir()
    (tmp_path / "amdsmi" / "__init__.py").write_text("import os\nos.environ['ROCM_PATH_THAT_IS_NOT_SET_FOR_TEST']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    d = discover(tmp_path, ("amdsmi",))
    (u,) = [u for u in d.unavailable if u.name == "amdsmi"]
    assert "could not load libamd_smi.so (KeyError" in u.reason


def test_nvml_without_a_driver_says_why():
    pytest.importorskip("pynvml")
    d = discover("/", ("nvml",))
    if d.sensors:
        pytest.skip("this machine has an NVIDIA driver; the unavailable path cannot be exercised")
    (u,) = [u for u in d.unavailable if u.name == "nvml"]
    assert u.reason.startswith("nvmlInit failed")


def test_psutil_under_a_fake_root_reads_load_not_real_temperatures(tmp_path):
    d = discover(tmp_path, ("psutil",))
    (s,) = d.sensors
    assert set(s.read().values) <= {"cpu.load_pct", "cpu.freq_mhz"} and "cpu.load_pct" in s.read().values
    assert any(u.name == "psutil:temperatures" and "--sysfs-root" in u.reason for u in d.unavailable)


def test_parse_sources_names_the_bad_one():
    assert parse_sources("all") == parse_sources(None)
    assert parse_sources("nvml, psutil") == ("nvml", "psutil")
    with pytest.raises(ValueError, match="unknown sensor source.*nvidia.*known: nvml"):
        parse_sources("nvidia")
