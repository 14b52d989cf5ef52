"""A card resolution's warning reaches report.json (architecture principle 3, seed defect 3)."""
import json

import pytest

from ds4kit.cards import resolve_card
from ds4kit.cards.report import card_results, record_card
from ds4kit.reports import start_run
from ds4kit.reports.schema import SchemaError, validate_report


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DS4KIT_CARD_PATH", raising=False)


def run_report(tmp_path, resolution, **limits):
    results, budgets = card_results(resolution, **limits)
    with start_run("model-card", tmp_path / "run") as run:
        record_card(run, resolution, budgets)
        run.finish(results)
    return json.loads((tmp_path / "run" / "report.json").read_text())


def test_hard_fallback_warning_is_recorded_in_the_report(tmp_path, capsys):
    res = resolve_card(tmp_path / "m.gguf", "Unknown Model", "llama", announce=False)
    report = run_report(tmp_path, res, max_tokens=2048)
    validate_report(report, "model-card")
    assert report["status"] == "ok"
    assert report["manifest"]["card"] == res.to_manifest()
    assert report["manifest"]["card"]["source"] == "hard-fallback"
    codes = {w["code"]: w["message"] for w in report["warnings"]}
    assert codes["model-card"] == res.warning
    assert "THINKING BUDGET IS 0" in codes["thinking-budget"]
    assert report["results"]["budgets"][0]["tokens"] == 0
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "MODEL CARD HARD FALLBACK" in summary
    # Run.warn says each warning on stderr exactly once.
    err = capsys.readouterr().err
    assert err.count("MODEL CARD HARD FALLBACK") == 1 and err.count("THINKING BUDGET IS 0") == 1


def test_bundled_card_report_has_no_warnings(tmp_path):
    res = resolve_card(None, "DeepSeek V4 Flash Src", "deepseek4")
    report = run_report(tmp_path, res, max_ctx=16384)
    assert report["warnings"] == []
    assert report["manifest"]["card"]["source"] == "bundled"
    high = [b for b in report["results"]["budgets"] if b["reasoning_effort"] == "high"][0]
    assert (high["tokens"], high["clamped_by"]) == (15360, "max_ctx")


def test_family_resolution_note_is_recorded(tmp_path):
    res = resolve_card(None, "Some DS4 Finetune", "deepseek4")
    report = run_report(tmp_path, res)
    assert report["manifest"]["card"]["family"] == "deepseek4"
    assert [w["code"] for w in report["warnings"]] == ["model-card"]


def test_finished_model_card_report_must_carry_its_results(tmp_path):
    res = resolve_card(None, "DeepSeek V4 Flash Src", "deepseek4")
    report = run_report(tmp_path, res)
    del report["results"]["budgets"]
    with pytest.raises(SchemaError, match="budgets"):
        validate_report(report, "model-card")
    report["results"] = {}
    report["status"] = "running"
    validate_report(report, "model-card")  # a run still in progress has no results yet
