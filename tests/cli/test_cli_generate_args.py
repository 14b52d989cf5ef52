"""`ds4kit generate` checks its arguments before anything loads, and each error names its flag.

The model given is a text file that is not a GGUF: had the engine tried to load it, the error
would be its "bad magic ... not a GGUF file" (the control case below shows that), so an
argument error proves the check came first. No run folder may appear either.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.cli.generate_cmd import generate_cmd

GGUF_ERROR = "not a GGUF file"


@pytest.fixture()
def not_gguf(tmp_path):
    path = tmp_path / "not-a-model.gguf"
    path.write_text("hello, I am not a model\n")
    return path


def invoke(*args):
    return CliRunner().invoke(main, ["generate", *[str(a) for a in args]])


@pytest.mark.parametrize("args, flag", [
    (["--temperature", "-1"], "--temperature"),
    (["--temperature", "nan"], "--temperature"),
    (["--top-p", "2"], "--top-p"),
    (["--top-p", "0"], "--top-p"),
    (["--min-p", "1.5"], "--min-p"),
    (["--min-p", "-0.1"], "--min-p"),
    (["--top-k", "-1"], "--top-k"),
    (["--repeat-penalty", "0"], "--repeat-penalty"),
    (["--presence-penalty", "inf"], "--presence-penalty"),
    (["--frequency-penalty", "nan"], "--frequency-penalty"),
    (["--seed", "-1"], "--seed"),
    (["--max-tokens", "0"], "--max-tokens"),
    (["--max-tokens", "-5"], "--max-tokens"),
    (["--max-ctx", "1"], "--max-ctx"),
    (["--logprobs", "-1"], "--logprobs"),
    (["--stop", ""], "--stop"),
    (["--threads", "-2"], "--threads"),
    (["--backend", "metal"], "--backend"),
    (["--card", "/nonexistent/card.json"], "--card"),
])
def test_bad_value_is_named_before_the_model_loads(not_gguf, tmp_path, args, flag):
    out = tmp_path / "run"
    res = invoke("-m", not_gguf, "-p", "Hi", *args, "--out", out)
    assert res.exit_code == 2, res.output
    assert flag in res.output, res.output
    assert GGUF_ERROR not in res.output
    assert not out.exists()


def test_empty_prompt_is_refused(not_gguf, tmp_path):
    res = invoke("-m", not_gguf, "-p", "", "--out", tmp_path / "run")
    assert res.exit_code == 2 and "--prompt" in res.output and "empty" in res.output, res.output
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    res = invoke("-m", not_gguf, "--prompt-file", empty, "--out", tmp_path / "run")
    assert res.exit_code == 2 and "--prompt-file" in res.output and "empty" in res.output, res.output
    assert not (tmp_path / "run").exists()


def test_bad_messages_file_is_named(not_gguf, tmp_path):
    msgs = tmp_path / "m.json"
    for text in ("not json", "[]", '[{"content": "no role"}]', '"a string"'):
        msgs.write_text(text)
        res = invoke("-m", not_gguf, "--messages", msgs, "--out", tmp_path / "run")
        assert res.exit_code == 2 and "--messages" in res.output and GGUF_ERROR not in res.output, (text, res.output)


def test_out_under_a_regular_file_names_out(not_gguf, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = invoke("-m", not_gguf, "-p", "Hi", "--out", blocker / "run")
    assert res.exit_code == 2 and "--out" in res.output and "not a folder" in res.output, res.output
    assert "Errno" not in res.output and GGUF_ERROR not in res.output
    res = invoke("-m", not_gguf, "-p", "Hi", "--out", blocker)
    assert res.exit_code == 2 and "--out" in res.output and "not a folder" in res.output, res.output


def test_out_with_an_existing_report_names_out(not_gguf, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "report.json").write_text(json.dumps({"kind": "generate"}))
    res = invoke("-m", not_gguf, "-p", "Hi", "--out", out)
    assert res.exit_code == 2 and "--out" in res.output and "already holds a report" in res.output, res.output
    assert GGUF_ERROR not in res.output
    assert json.loads((out / "report.json").read_text()) == {"kind": "generate"}  # untouched


def test_control_valid_arguments_reach_the_engine(not_gguf, tmp_path):
    # The same file with good arguments fails in the engine: what the tests above rule out.
    out = tmp_path / "run"
    res = invoke("-m", not_gguf, "-p", "Hi", "--out", out)
    assert res.exit_code == 2 and GGUF_ERROR in res.output, res.output
    rep = json.loads((out / "report.json").read_text())
    assert rep["status"] == "failed" and GGUF_ERROR in rep["error"]["message"]


def test_every_sampling_flag_has_help():
    sampling = {"--temperature", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--presence-penalty",
                "--frequency-penalty", "--seed", "--greedy", "--max-tokens", "--max-ctx", "--logprobs"}
    helps = {opt: p.help for p in generate_cmd.params for opt in getattr(p, "opts", [])}
    missing = sorted(flag for flag in sampling if not helps.get(flag))
    assert not missing, f"no help text for {missing}"
