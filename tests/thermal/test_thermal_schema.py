import pytest

from ds4kit.reports import SchemaError, start_run
from ds4kit.thermal.sensors import discover
from ds4kit.thermal.summary import telemetry_results


def _telemetry(tmp_path):
    d = discover(tmp_path / "empty-root", ("k10temp",))
    samples = [{"i": i, "t": i * 0.5, "time": 0.0, "phase": "watch", "values": {"k10temp.tctl_c": 50.0 + i}}
               for i in range(4)]
    return telemetry_results(d, samples, interval=0.5, missed_ticks=0, temp_patterns=("*",), warn_at=51.0)


def test_telemetry_results_validate_and_report_time_above_warn(tmp_path):
    res = {"mode": "api", **_telemetry(tmp_path)}
    assert res["watched_temperature"]["time_above_warn_s"] == 1.0  # samples at 51 and 52 C, each held 0.5 s
    assert res["metrics"]["k10temp.tctl_c"] == {"kind": "temperature", "unit": "C", "n": 4, "min": 50.0,
                                                "median": 51.5, "max": 53.0}
    with start_run("thermal", tmp_path / "ok") as run:
        run.finish(res)


@pytest.mark.parametrize("mode,drop,needle", [
    ("api", "throttle", "'throttle' is a required property"),
    ("command", None, "'exit_code' is a required property"),
])
def test_incomplete_results_are_rejected(tmp_path, mode, drop, needle):
    res = {"mode": mode, **_telemetry(tmp_path)}
    if drop:
        del res[drop]
    with start_run("thermal", tmp_path / "bad") as run:
        with pytest.raises(SchemaError, match=needle):
            run.finish(res)
        run.report["status"] = "failed"


def test_episode_carries_its_peak_temperature(tmp_path):
    d = discover(tmp_path / "empty-root", ("k10temp",))
    samples = [{"i": i, "t": float(i), "time": 0.0, "phase": "run",
                "values": {"gpu0.temp_c": 80.0 + i},
                "throttle": {"nvml:0": {"source": "nvml", "reasons": 0x20 if 2 <= i < 4 else 0,
                                        "active": ["SwThermalSlowdown"] if 2 <= i < 4 else []}}}
               for i in range(6)]
    res = telemetry_results(d, samples, interval=1.0, missed_ticks=0, temp_patterns=("gpu*",))
    (e,) = res["throttle"]["episodes"]
    assert (e["start_t"], e["end_t"], e["peak_temp_c"]) == (2.0, 4.0, 84.0)
