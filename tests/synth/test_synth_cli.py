"""`ds4kit model synth` end to end: files, report (validated against its schema), errors; the demo model cache."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.reports import validate_report
from ds4kit.synth import demo_model_path, sha256_file


def _run(args):
    return CliRunner().invoke(main, ["model", "synth", *args], catch_exceptions=False)


def test_cli_writes_target_drafter_and_a_valid_report(tmp_path, synth_tiny_files):
    res = _run([str(tmp_path / "t.gguf"), "--preset", "tiny", "--seed", "0", "--drafter", str(tmp_path / "d.gguf"),
                "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    validate_report(report, "model-synth")
    assert report["status"] == "ok" and report["kind"] == "model-synth"
    r = report["results"]
    # same preset, seed and types as the API-written fixture: byte-identical files
    assert r["target"]["sha256"] == synth_tiny_files.target.sha256 == sha256_file(tmp_path / "t.gguf")
    assert r["drafter"]["sha256"] == synth_tiny_files.drafter.sha256
    assert r["llama_cpp_loadable"] is True and r["config"]["compress_ratios"] == [0, 0, 4, 128, 4]
    assert report["manifest"]["model"]["sha256"] == r["target"]["sha256"]
    assert report["manifest"]["drafter"]["architecture"] == "deepseek4-dflash-draft"
    assert (tmp_path / "run" / "summary.md").read_text().count("sha256") == 2


def test_cli_overrides_and_rocm_types_are_reported(tmp_path):
    res = _run([str(tmp_path / "s.gguf"), "--preset", "tiny", "--layers", "3", "--ratios", "0,4,128",
                "--set", "vocab_size=512", "--types", "experts=102", "--types", "attn=Q4_0_ROCMFP4",
                "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    r = report["results"]
    assert r["config"]["n_layer"] == 3 and r["types"]["experts"] == "Q6_0_ROCMFPX"
    assert r["llama_cpp_loadable"] is False and r["drafter"] is None
    assert {w["code"] for w in report["warnings"]} == {"synth-llama-incompatible"}
    assert r["target"]["quant_mix"]["Q6_0_ROCMFPX"] == 9  # 3 expert tensors x 3 layers


@pytest.mark.parametrize("args, message", [
    (["--types", "experts=Q4_K"], "blk.0.ffn_gate_exps.weight"),
    (["--types", "experts"], "is not GROUP=VALUE"),
    (["--set", "n_heads=3"], "unknown config field 'n_heads'"),
    (["--ratios", "0,0,4,128,5"], "may only hold 0, 4 or 128"),
    (["--preset", "huge"], "unknown preset 'huge'"),
    (["--heads", "3"], "multiple of o_groups"),
    (["--preset", "full"], "pass --allow-large"),
])
def test_cli_rejects_bad_arguments_with_a_clear_message(tmp_path, args, message):
    res = CliRunner().invoke(main, ["model", "synth", str(tmp_path / "x.gguf"), *args, "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and message in res.output, res.output
    assert not (tmp_path / "x.gguf").exists() and not (tmp_path / "r").exists()


def test_demo_model_is_written_once_into_the_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DS4KIT_CACHE_DIR", str(tmp_path / "cache"))
    path = demo_model_path()
    assert path.is_file() and path.parent.parent == tmp_path / "cache"
    stamp = path.stat().st_mtime_ns
    assert demo_model_path() == path and path.stat().st_mtime_ns == stamp  # reused, not rewritten
    assert not list(path.parent.glob("*.partial"))
