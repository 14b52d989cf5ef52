"""Run folders, atomic writes, item logs and schema validation (architecture principle 3)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ds4kit.reports import ItemLog, SchemaError, atomic_write_json, start_run, validate_report
from ds4kit.reports.schema import known_kinds, load_schema


def test_every_schema_is_valid_json_schema_and_references_the_envelope():
    import jsonschema

    kinds = known_kinds()
    assert "model-info" in kinds and "model-hash" in kinds
    for kind in kinds:
        schema = load_schema(kind)
        jsonschema.validators.validator_for(schema).check_schema(schema)
        assert "common.json#/$defs/envelope" in json.dumps(schema), kind


def test_run_writes_valid_report_at_start_and_end(tmp_path):
    out = tmp_path / "run"
    run = start_run("model-hash", out, command=["ds4kit", "model", "hash", "x"])
    early = json.loads((out / "report.json").read_text())
    assert early["status"] == "running" and early["finished_at"] is None
    validate_report(early)
    run.finish({"path": "/x", "size_bytes": 1, "mtime_ns": 0, "sha256": "0" * 64, "cached": False}, summary_md="hi\n")
    rep = json.loads((out / "report.json").read_text())
    assert rep["status"] == "ok" and rep["duration_s"] >= 0
    assert rep["manifest"]["command"] == ["ds4kit", "model", "hash", "x"]
    assert rep["manifest"]["ds4kit"]["version"]
    assert rep["manifest"]["host"]["cpu"]
    assert "summary.md" in rep["files"].values()
    assert (out / "summary.md").read_text().endswith("hi\n")


def test_results_that_break_the_schema_are_refused(tmp_path):
    run = start_run("model-hash", tmp_path / "r")
    with pytest.raises(SchemaError, match=r"results/sha256"):
        run.finish({"path": "/x", "size_bytes": 1, "mtime_ns": 0, "sha256": "not-a-hash", "cached": False})


def test_exception_inside_run_records_failure_and_propagates(tmp_path):
    out = tmp_path / "r"
    with pytest.raises(ZeroDivisionError):
        with start_run("model-hash", out):
            1 / 0
    rep = json.loads((out / "report.json").read_text())
    assert rep["status"] == "failed"
    assert rep["error"]["type"] == "ZeroDivisionError"
    validate_report(rep)


def test_existing_report_is_not_overwritten_without_resume(tmp_path):
    from ds4kit.errors import ConfigError

    out = tmp_path / "r"
    start_run("model-hash", out)
    with pytest.raises(ConfigError, match="--resume") as err:
        start_run("model-hash", out)
    assert err.value.option == "--out"
    start_run("model-hash", out, resume=True)  # allowed


def test_warnings_are_loud_and_recorded(tmp_path, capsys):
    run = start_run("model-hash", tmp_path / "r")
    run.set_card({"source": "hard-fallback", "name": "hard fallback", "path": None, "family": None,
                  "warning": "no card found"})
    err = capsys.readouterr().err
    assert "WARNING [model-card]: no card found" in err
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    run.finish({"path": "/x", "size_bytes": 1, "mtime_ns": 0, "sha256": "a" * 64, "cached": True})
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    assert {"code": "model-card", "message": "no card found"} in rep["warnings"]
    assert "WARNING [model-card]" in (tmp_path / "r" / "summary.md").read_text()


def test_atomic_write_leaves_old_file_when_serialisation_fails(tmp_path):
    p = tmp_path / "x.json"
    atomic_write_json(p, {"a": 1})
    with pytest.raises(ValueError):
        atomic_write_json(p, {"a": float("nan")})  # NaN is not JSON
    assert json.loads(p.read_text()) == {"a": 1}
    assert [f.name for f in tmp_path.iterdir()] == ["x.json"]  # no temp files left behind


def test_item_log_append_resume_and_torn_tail(tmp_path):
    log = ItemLog(tmp_path / "items.jsonl", key="task")
    log.append({"task": "a", "ok": True})
    log.append({"task": "b", "ok": False})
    with open(log.path, "a") as f:  # a kill in the middle of a write
        f.write('{"task": "c", "ok"')
    assert log.done_keys() == {"a", "b"}
    log.append({"task": "c", "ok": True})
    assert [r["task"] for r in log.read()] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="task"):
        log.append({"nope": 1})


def test_item_log_survives_a_killed_writer(tmp_path):
    """A child killed mid-run loses no finished item."""
    path = tmp_path / "items.jsonl"
    code = (
        "import os, signal\n"
        "from ds4kit.reports import ItemLog\n"
        f"log = ItemLog({str(path)!r})\n"
        "for i in range(5):\n"
        "    log.append({'id': i})\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.run([sys.executable, "-c", code], env=env)
    assert proc.returncode == -9
    assert ItemLog(path).done_keys() == {0, 1, 2, 3, 4}


def test_report_show_prints_summary_and_validity(tmp_path):
    from click.testing import CliRunner

    from ds4kit.cli import main

    run = start_run("model-hash", tmp_path / "r")
    run.finish({"path": "/x", "size_bytes": 7, "mtime_ns": 0, "sha256": "b" * 64, "cached": False})
    res = CliRunner().invoke(main, ["report", "show", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "model-hash" in res.output and "valid" in res.output and "b" * 64 in res.output
    # A corrupted report is named as invalid, not shown as fine.
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    rep["results"]["sha256"] = "zz"
    (tmp_path / "r" / "report.json").write_text(json.dumps(rep))
    res = CliRunner().invoke(main, ["report", "show", str(tmp_path / "r")])
    assert "INVALID" in res.output
