"""`ds4kit generate --drafter D --spec-width auto|N` end to end (issue 9 item 5)."""
import json

import pytest
from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.reports.schema import validate_report

PROMPT = "Name three rivers."


def gen(out, target, *flags):
    res = CliRunner().invoke(main, ["generate", "-m", str(target), "-p", PROMPT, "--greedy", "-q", "--max-tokens",
                                    "20", "-t", "2", "--out", str(out), *flags])
    return res, (json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None)


@pytest.mark.parametrize("width", ["auto", "3", "8"])
def test_drafter_output_equals_target_only_and_is_reported(spec_files, tmp_path, width):
    target, drafter = spec_files
    _, plain = gen(tmp_path / "plain", target)
    res, rep = gen(tmp_path / "spec", target, "--drafter", drafter, "--spec-width", width)
    assert res.exit_code == 0, res.output
    validate_report(rep, "generate")
    assert rep["results"]["output"]["ids"] == plain["results"]["output"]["ids"]
    sp = rep["results"]["speculation"]
    assert sp["drafter"] == "dspark" and sp["emitted"] == 20
    assert sp["width"] == ("auto" if width == "auto" else int(width))
    if width == "8":
        assert sp["effective_width"] == 6 and "capped" in sp["width_capped"]
    steps = [json.loads(x) for x in (tmp_path / "spec" / "speculation.jsonl").read_text().splitlines()]
    assert len(steps) == sp["steps"] and sum(s["accepted"] + 1 for s in steps) + 1 == 20
    assert rep["manifest"]["target"]["speculation"]["drafter"] == "dspark"
    assert plain["results"]["speculation"] is None


@pytest.mark.parametrize("bad", ["0", "9", "two"])
def test_spec_width_outside_1_to_8_is_a_usage_error(spec_files, tmp_path, bad):
    target, drafter = spec_files
    res, rep = gen(tmp_path / "x", target, "--drafter", drafter, "--spec-width", bad)
    assert res.exit_code == 2 and "--spec-width" in res.output and rep is None


def test_a_drafter_for_another_target_is_refused_naming_the_key(spec_files, tmp_path):
    from ds4kit.synth import preset, write_drafter

    other = tmp_path / "other-drafter.gguf"
    write_drafter(other, preset("tiny").replace(n_embd=preset("tiny").n_embd * 2), seed=1)
    res, rep = gen(tmp_path / "y", spec_files[0], "--drafter", other)
    assert res.exit_code == 2 and "embedding_length" in res.output, res.output
    assert rep["status"] == "failed"
