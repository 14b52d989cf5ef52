"""`ds4kit bench engine` end to end on the tiny synthetic model (no speed is asserted anywhere).

One run with both engines checks the report against its schema, the CSV rows, the ratios
recomputed from those rows, the fractions recomputed from the report's own inputs, and the
build information against the libraries themselves. Two more runs check that a missing
llama.cpp (left out of --engines, or its import made to fail in the child) gives a loud
warning and no ratio.
"""
from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ds4kit.bench.engine_runners import HIDE_LLAMA_ENV
from ds4kit.bench.engine_bench_output import CSV_COLUMNS
from ds4kit.cli import main
from ds4kit.reports.schema import validate_report
from ds4kit.synth import preset, write_target

REPO = Path(__file__).resolve().parents[2]
QUICK = ["-p", "16", "-n", "4", "-r", "1", "-t", "2", "--no-progress", "--probe-mb", "16"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bench_engine") / "tiny.gguf"
    write_target(path, preset("tiny"), seed=0, progress=False)
    return path


def _run(args: list[str], out: Path) -> tuple[dict, list[dict], str, Path]:
    res = CliRunner().invoke(main, ["bench", "engine", *args, "--out", str(out), "-o", "md"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    with open(out / "results.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return report, rows, res.output, out


@pytest.fixture(scope="module")
def both(tiny_model, tmp_path_factory):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is needed for the side-by-side run")
    return _run([str(tiny_model), *QUICK], tmp_path_factory.mktemp("both") / "run")


def test_report_validates_and_both_engines_ran(both):
    report, rows, out, _ = both
    validate_report(report, "bench-engine")  # raises on any schema violation
    assert report["status"] == "ok"
    r = report["results"]
    assert set(r["engines"]) == {"ds4kit", "llama.cpp"}
    assert all(e["status"] == "ok" for e in r["engines"].values())
    assert set(r["engines"]["ds4kit"]["tests"]) == {"pp16", "tg4"}
    assert r["ratio_measured"] is True
    assert not [w for w in report["warnings"] if w["code"] == "llama-cpp-missing"]
    assert "| pp16 |" in out and "| tg4 |" in out


def test_csv_rows_complete(both, tiny_model):
    report, rows, _, _ = both
    assert len(rows) == 2 * 2 * 1 == report["results"]["csv_rows"]  # engines x tests x reps
    assert {(r["engine"], r["test"]) for r in rows} == {(e, t) for e in ("ds4kit", "llama.cpp") for t in ("pp16", "tg4")}
    for row in rows:
        assert list(row) == CSV_COLUMNS
        empty = [k for k, v in row.items() if v in ("", None)]
        assert not empty, f"empty columns {empty} in {row}"
        assert row["model_filename"] == str(tiny_model)
        assert int(row["n_threads"]) == 2
        n = int(row["n_prompt"]) + int(row["n_gen"])
        assert n == int(re.sub(r"\D", "", row["test"]))
        assert float(row["tok_s"]) == pytest.approx(n / float(row["seconds"]), rel=1e-4)
        assert re.fullmatch(r"[0-9a-f]{40}|unknown", row["ds4kit_commit"])


def test_ratio_is_ours_over_theirs_from_rows(both):
    report, rows, _, _ = both
    ratios = report["results"]["ratios"]
    assert set(ratios) == {"pp16", "tg4"}
    for test, entry in ratios.items():
        ours = np.mean([float(r["tok_s"]) for r in rows if r["engine"] == "ds4kit" and r["test"] == test])
        theirs = np.mean([float(r["tok_s"]) for r in rows if r["engine"] == "llama.cpp" and r["test"] == test])
        assert entry["ratio"] == pytest.approx(ours / theirs, rel=1e-4)
        best_ours = max(float(r["tok_s"]) for r in rows if r["engine"] == "ds4kit" and r["test"] == test)
        best_theirs = max(float(r["tok_s"]) for r in rows if r["engine"] == "llama.cpp" and r["test"] == test)
        assert entry["ratio_best"] == pytest.approx(best_ours / best_theirs, rel=1e-4)
        assert entry["target_met"] == (entry["ratio"] >= 1.0)
    assert report["results"]["target_met"] == all(e["ratio"] >= 1.0 for e in ratios.values())


def test_engines_alternate_test_by_test(both):
    # interleaved: each test runs on both engines before the next test starts (A B, then B A with -r 2)
    report, _, _, _ = both
    eng = report["results"]["engines"]
    ends = sorted((eng[e]["rep_t_end"][t][0], e, t) for e in eng for t in ("pp16", "tg4"))
    assert [(e, t) for _, e, t in ends] == [("ds4kit", "pp16"), ("llama.cpp", "pp16"),
                                           ("ds4kit", "tg4"), ("llama.cpp", "tg4")]


def test_stats_match_numpy(both):
    report, _, _, _ = both
    for e in report["results"]["engines"].values():
        for t in e["tests"].values():
            secs = np.array(t["seconds"])
            assert t["reps"] == len(secs) == 1
            assert t["mean_s"] == pytest.approx(secs.mean())
            assert t["min_s"] == pytest.approx(secs.min())
            assert t["tok_s"] == pytest.approx(np.mean(t["n_tokens"] / secs))
            assert t["stddev_s"] == 0.0


def test_fractions_and_work_per_token(both, tiny_model):
    from gguf import GGUFReader

    report, _, _, _ = both
    r = report["results"]
    hw, work = r["hardware"], r["work_per_token"]
    # independent facts from gguf-py: the output head is n_embd x n_vocab; routed experts
    # contribute expert_used_count/expert_count of their elements
    g = GGUFReader(str(tiny_model))
    cfg = preset("tiny")
    out_head = next(int(t.n_elements) for t in g.tensors if t.name == "output.weight")
    assert work["prefill_params"]["output_head"] == out_head == cfg.n_embd * r["model"]["n_vocab"]
    exps = sum(int(t.n_elements) for t in g.tensors if "_exps." in t.name)
    assert work["prefill_params"]["routed_experts_active"] == pytest.approx(
        exps * cfg.n_expert_used / cfg.n_expert, abs=4 * cfg.n_layer)
    assert 0 < work["prefill_params"]["per_token"] < sum(int(t.n_elements) for t in g.tensors)
    for e in r["engines"].values():
        tg, pp = e["tests"]["tg4"], e["tests"]["pp16"]
        assert e["fractions"]["tg4"] == pytest.approx(
            tg["tok_s"] * work["decode_bytes"]["total"] / hw["bandwidth"]["bytes_per_s"], rel=1e-9)
        flop = 2 * (16 * work["prefill_params"]["per_token"] + work["prefill_params"]["output_head"])
        assert e["fractions"]["pp16"] == pytest.approx(flop / pp["mean_s"] / hw["matmul"]["flop_per_s"], rel=1e-9)


def test_engine_build_info_and_memory(both):
    import llama_cpp

    from ds4kit import _engine

    report, rows, _, _ = both
    eng = report["results"]["engines"]
    ours, theirs = eng["ds4kit"], eng["llama.cpp"]
    assert ours["info"]["build_info"] == dict(_engine.build_info)
    assert ours["info"]["cpu_features"] == _engine.cpu_features()
    assert theirs["info"]["version"] == llama_cpp.__version__
    sysinfo = llama_cpp.llama_print_system_info()
    assert theirs["info"]["system_info"] == (sysinfo.decode() if isinstance(sysinfo, bytes) else sysinfo)
    for e in (ours, theirs):
        assert e["info"]["threads"] == 2
        assert e["peak_rss_bytes"] >= e["rss_after_load_bytes"] > 0
        assert e["load_s"] > 0
    assert {r["engine_version"] for r in rows if r["engine"] == "llama.cpp"} == {llama_cpp.__version__}


def test_plot_and_summary_written(both):
    report, _, out, folder = both
    files = report["files"]
    assert (folder / files["plot"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (folder / files["summary"]).read_text(encoding="utf-8")
    assert summary in out  # -o md prints the summary
    assert "ratio ds4kit/llama.cpp" in summary
    assert "decode fraction:" in summary and "prefill fraction:" in summary
    for engine in ("ds4kit", "llama.cpp"):
        assert (folder / files[f"log_{engine}"]).is_file()


def _no_ratio_checks(report: dict, rows: list[dict], out: str, folder: Path) -> None:
    validate_report(report, "bench-engine")
    assert report["status"] == "ok"
    r = report["results"]
    assert r["ratios"] == {} and r["ratio_measured"] is False and r["target_met"] is None
    assert [w for w in report["warnings"] if w["code"] == "llama-cpp-missing"]
    assert "NO RATIO" in out
    assert (folder / report["files"]["plot"]).is_file()
    assert rows and {row["engine"] for row in rows} == {"ds4kit"}
    assert r["engines"]["ds4kit"]["status"] == "ok"


def test_engines_ds4kit_only_warns_no_ratio(tiny_model, tmp_path):
    report, rows, out, folder = _run([str(tiny_model), *QUICK, "--engines", "ds4kit", "--no-fp8-kv",
                                      "--no-indexer-fp4"], tmp_path / "run")
    _no_ratio_checks(report, rows, out, folder)
    assert set(report["results"]["engines"]) == {"ds4kit"}
    # The numerics flags reach the ds4kit worker and are recorded.
    r = report["results"]
    assert (r["settings"]["fp8_kv"], r["settings"]["indexer_fp4"], r["settings"]["backend"]) == (False, False, "auto")
    assert r["engines"]["ds4kit"]["info"]["numerics"] == {"fp8_kv": False, "indexer_fp4": False}
    assert r["numerics"]["like_for_like"] is True
    assert report["manifest"]["target"]["numerics"] == {"fp8_kv": False, "indexer_fp4": False}
    assert report["manifest"]["target"]["threads"] == 2
    assert report["manifest"]["target"]["backend_resolved"] == r["engines"]["ds4kit"]["info"]["backend"]
    assert report["manifest"]["target"]["backend_resolved"].startswith("cpu")


def test_default_numerics_say_llama_cpp_has_neither_rounding(both):
    report, _, out, _ = both
    r = report["results"]
    assert (r["settings"]["fp8_kv"], r["settings"]["indexer_fp4"]) == (True, True)
    assert r["numerics"]["llama.cpp"] == {"fp8_kv": False, "indexer_fp4": False}
    assert r["numerics"]["like_for_like"] is False and "--no-fp8-kv --no-indexer-fp4" in r["numerics"]["note"]
    assert r["engines"]["llama.cpp"]["info"]["numerics"] == {"fp8_kv": False, "indexer_fp4": False}
    assert r["engines"]["ds4kit"]["info"]["numerics"] == {"fp8_kv": True, "indexer_fp4": True}
    assert "--no-fp8-kv --no-indexer-fp4" in out  # in the printed summary


def test_model_given_twice_is_a_usage_error(tiny_model, tmp_path):
    res = CliRunner().invoke(main, ["bench", "engine", str(tiny_model), "-m", str(tiny_model), "--out",
                                    str(tmp_path / "o")])
    assert res.exit_code == 2 and "MODEL or --model" in res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_keeps_the_finished_repetitions(tiny_model, tmp_path, sig):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "ds4kit", "bench", "engine", str(tiny_model), "-p", "16", "-n", "4",
                             "-r", "500", "-t", "1", "--engines", "ds4kit", "--no-progress", "--probe-mb", "16",
                             "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        reps = out / "reps.jsonl"
        end = time.monotonic() + 120
        while not (reps.exists() and len(reps.read_text().splitlines()) >= 3):
            assert time.monotonic() < end and proc.poll() is None, "no repetition finished"
            time.sleep(0.05)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    validate_report(report, "bench-engine")
    assert report["status"] == "interrupted" and report["interrupt"]["signal"] == sig.name
    logged = [json.loads(line) for line in reps.read_text().splitlines()]
    assert 3 <= len(logged) < 1000
    tests = report["results"]["engines"]["ds4kit"]["tests"]
    assert sum(t["reps"] for t in tests.values()) == len(logged)
    for name, t in tests.items():
        assert t["seconds"] == [e["seconds"] for e in logged if e["test"] == name]
    with open(out / "results.csv", newline="", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == len(logged) == report["results"]["csv_rows"]
    assert len(report["results"]["hardware"]["runs"]) == 1  # no second probe after the signal
    assert "| pp16 |" in stdout


def test_llama_import_failing_in_child_warns_no_ratio(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setenv(HIDE_LLAMA_ENV, "1")
    report, rows, out, folder = _run([str(tiny_model), *QUICK], tmp_path / "run")
    _no_ratio_checks(report, rows, out, folder)
    lc = report["results"]["engines"]["llama.cpp"]
    assert lc["status"] == "unavailable" and HIDE_LLAMA_ENV in lc["reason"]
    assert lc["tests"] == {}


def test_llama_failing_to_load_warns_no_ratio(tmp_path):
    # a shape-only file (no tokenizer metadata) that our engine runs and llama.cpp refuses
    pytest.importorskip("llama_cpp", reason="needs llama.cpp to fail inside it")
    path = tmp_path / "novocab.gguf"
    write_target(path, preset("tiny").replace(vocab_size=512), seed=0, progress=False)
    report, rows, out, _ = _run([str(path), *QUICK], tmp_path / "run")
    validate_report(report, "bench-engine")
    r = report["results"]
    assert r["engines"]["llama.cpp"]["status"] == "failed"
    assert "Failed to load model" in r["engines"]["llama.cpp"]["reason"]
    assert r["ratios"] == {} and r["ratio_measured"] is False
    assert [w for w in report["warnings"] if w["code"] == "engine-failed" and "NO ratio" in w["message"]]
    assert {row["engine"] for row in rows} == {"ds4kit"} and "NO RATIO" in out


def test_signal_before_any_repetition_still_writes_a_valid_report(tiny_model, tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "ds4kit", "bench", "engine", str(tiny_model), "-p", "16", "-n", "",
                             "-r", "50", "-t", "1", "--engines", "ds4kit", "--no-progress", "--probe-mb", "64",
                             "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # the first line: the hardware probe starts
        assert "hardware probe" in line, line
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    validate_report(report, "bench-engine")
    assert report["status"] == "interrupted"
    ds4 = report["results"]["engines"]["ds4kit"]
    logged = (out / "reps.jsonl").read_text().splitlines() if (out / "reps.jsonl").exists() else []
    assert sum(t["reps"] for t in ds4["tests"].values()) == len(logged) < 50
    if ds4["status"] == "not_run":
        assert ds4["tests"] == {} and ds4["reason"]
