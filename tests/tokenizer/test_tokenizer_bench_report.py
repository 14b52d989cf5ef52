"""`ds4kit bench tokenizer` writes a bench-tokenizer report that matches its schema."""
from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.reports import SchemaError, validate_report


@pytest.fixture(scope="module")
def bench_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "run"
    result = CliRunner().invoke(main, ["bench", "tokenizer", "--size-mb", "0.05", "--repeat", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "ratio" in result.output
    return json.loads((out / "report.json").read_text(encoding="utf-8")), out


def test_report_is_valid_and_truthful(bench_report):
    report, out = bench_report
    validate_report(report)
    r = report["results"]
    assert report["status"] == "ok" and report["kind"] == "bench-tokenizer"
    assert r["ids_identical"] is True and r["mismatched_documents"] == []
    assert r["corpus"]["bytes"] >= 50_000
    assert r["corpus"]["bytes"] == sum(r["corpus"]["bytes_by_kind"].values())
    assert r["ratio"] == pytest.approx(r["ours"]["mb_per_s"] / r["hf"]["mb_per_s"], rel=1e-3)
    assert r["target_met"] == (r["ratio"] >= 1.0)
    assert r["hf"]["env"] == {"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    assert "Ratio ours/HF" in (out / "summary.md").read_text(encoding="utf-8")


def test_schema_rejects_incomplete_results(bench_report):
    report, _ = bench_report
    bad = copy.deepcopy(report)
    del bad["results"]["ratio"]
    with pytest.raises(SchemaError, match="ratio"):
        validate_report(bad)
    bad = copy.deepcopy(report)
    bad["results"]["ours"]["mb_per_s"] = -1
    with pytest.raises(SchemaError, match="mb_per_s"):
        validate_report(bad)


def test_bad_size_is_refused():
    result = CliRunner().invoke(main, ["bench", "tokenizer", "--size-mb", "0"])
    assert result.exit_code != 0 and "size-mb" in result.output
