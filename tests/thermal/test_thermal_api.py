import json
import time

import pytest

from ds4kit.reports import start_run
from ds4kit.thermal import TelemetryRecorder
from ds4kit.thermal.sampler import Ticker, missed_ticks
from thermal_fixtures import V2_2, FakeSysfs, blob, write_atomic


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_missed_ticks_count_a_late_start_and_overruns():
    # On time: none. First sample 0.4 s late on a 0.2 s grid: the ticks at 0 and 0.2 had none.
    assert missed_ticks([{"t": 0.02}, {"t": 0.22}, {"t": 0.42}], 0.2) == 0
    assert missed_ticks([{"t": 0.4}, {"t": 0.6}, {"t": 0.8}, {"t": 1.0}], 0.2) == 2
    # A sample that overran by two ticks, after an on-time start.
    assert missed_ticks([{"t": 0.0}, {"t": 0.2}, {"t": 0.8}], 0.2) == 2
    assert missed_ticks([], 0.2) == 0


def test_ticker_keeps_the_grid_and_skips_missed_ticks():
    clk = FakeClock()
    t = Ticker(1.0, clock=clk)
    clk.now += 0.3            # a sample took 0.3 s
    assert t.delay() == pytest.approx(0.7)
    clk.now = 101.0 + 0.05    # woke up late: the next wait shrinks, the grid does not move
    assert t.delay() == pytest.approx(0.95)
    clk.now = 102.0 + 2.5     # a sample overran by 2.5 ticks: skip to the next grid point
    assert t.delay() == pytest.approx(0.5) and t.missed == 2
    clk.now = 105.0
    assert t.delay() == pytest.approx(1.0) and t.missed == 2


def test_ticker_rejects_nonpositive_interval():
    with pytest.raises(ValueError, match="must be positive"):
        Ticker(0)


def test_recorder_inside_another_commands_run(tmp_path):
    root = tmp_path / "root"
    fs = FakeSysfs(root)
    fs.card("card0", blob(V2_2, temperature_gfx=5000, average_gfxclk_frequency=2000, average_gfx_activity=100))
    with start_run("thermal", tmp_path / "run") as run:
        with TelemetryRecorder(run.folder, interval=0.05, sysfs_root=str(root), sources=("gpu_metrics",)) as tel:
            time.sleep(0.3)
            tel.mark("phase two")
            write_atomic(root / "sys/class/drm/card0/device/gpu_metrics",
                         blob(V2_2, temperature_gfx=7300, average_gfxclk_frequency=2000, average_gfx_activity=100))
            time.sleep(0.3)
        res = tel.results
        for label, name in tel.files.items():
            run.add_file(label, name)
        run.finish(res)
    assert res["mode"] == "api"
    assert res["metrics"]["card0.gfx_c"]["min"] == 50.0 and res["metrics"]["card0.gfx_c"]["max"] == 73.0
    assert res["watched_temperature"]["peak"]["value_c"] == 73.0
    lines = [json.loads(x) for x in (run.folder / "telemetry.jsonl").read_text().splitlines()]
    assert res["samples"]["count"] == len(lines) >= 8
    assert any("phase two" in s.get("events", []) for s in lines)
    assert lines[-1]["events"][-1] == "stop"
    assert set(tel.files) == {"telemetry_jsonl", "telemetry_csv", "telemetry_png"}
    assert (run.folder / "telemetry.png").stat().st_size > 1000
    assert json.loads((run.folder / "report.json").read_text())["status"] == "ok"
