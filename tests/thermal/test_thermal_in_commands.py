"""`--thermal` on a long command (issue 11 item 4): telemetry in the command's own report, the
soak summary, and `--abort-at` stopping cleanly with what was finished (exit 3)."""
import csv
import json
import threading
import time

from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.reports.schema import validate_report
from thermal_fixtures import FakeSysfs, write_atomic


def hot_box(tmp_path, celsius):
    root = tmp_path / "root"
    hw = FakeSysfs(root).hwmon(0, "amdgpu", {"temp1_input": int(celsius * 1000), "temp1_label": "edge"})
    return root, hw


def generate(target, out, root, *flags):
    return CliRunner().invoke(main, ["generate", "-m", str(target), "-p", "Tell a long story.", "--greedy", "-q",
                                     "-t", "1", "--out", str(out), "--thermal", "--thermal-interval", "0.05",
                                     "--thermal-sensors", "hwmon-amdgpu", "--thermal-sysfs-root", str(root), *flags])


def test_telemetry_lands_in_the_generate_report(tiny_target, tmp_path):
    root, _ = hot_box(tmp_path, 45)
    out = tmp_path / "run"
    res = generate(tiny_target, out, root, "--max-tokens", "60")
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep, "generate")
    tel = rep["results"]["telemetry"]
    assert tel["watched_temperature"]["peak"]["value_c"] == 45 and tel["thermal_abort"] is None
    assert tel["samples"]["count"] >= 2 and (out / "telemetry.jsonl").exists() and (out / "telemetry.csv").exists()
    assert tel["soak"]["throttle_episodes"] == 0
    # Progress is sampled with the telemetry: the windows' rates add up to the tokens generated.
    w = tel["soak"]["windows"]
    assert w and all(x["temp_c"] == 45 for x in w)
    # Each window covers [t_start, t]; the first starts at the first sample, not at 0.
    assert all(a["t"] == b["t_start"] for a, b in zip(w, w[1:]))
    total = sum(x["rate"] * (x["t"] - x["t_start"]) for x in w)
    assert total <= 60 + 1e-6


def test_abort_at_stops_cleanly_and_keeps_the_tokens(tiny_target, tmp_path):
    root, hw = hot_box(tmp_path, 40)
    out = tmp_path / "hot"

    def heat_up():
        time.sleep(0.4)
        write_atomic(hw / "temp1_input", "97000\n")

    t = threading.Thread(target=heat_up)
    t.start()
    res = generate(tiny_target, out, root, "--max-tokens", "100000", "--max-ctx", "200000", "--abort-at", "90",
                   "--abort-after", "0.1")
    t.join()
    assert res.exit_code == 3, res.output
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep, "generate")
    assert rep["status"] == "interrupted"
    assert rep["interrupt"]["cause"] == "thermal" and rep["interrupt"]["exit_code"] == 3
    r = rep["results"]
    assert r["stop"]["reason"] == "interrupted" and 0 < r["output"]["n_tokens"] < 100000
    assert r["telemetry"]["thermal_abort"]["value_c"] == 97 and "ABORT" in res.output
    # Every generated token is kept in tokens.csv.
    with open(out / "tokens.csv", newline="", encoding="utf-8") as f:
        assert len(list(csv.reader(f))) == r["output"]["n_tokens"] + 1


def test_thresholds_without_thermal_are_usage_errors(tiny_target, tmp_path):
    res = CliRunner().invoke(main, ["generate", "-m", str(tiny_target), "-p", "x", "--abort-at", "90",
                                    "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "--abort-at" in res.output and "needs --thermal" in res.output
