"""`bench engine -d`: tests at a context depth. The ds4kit runner prefills each depth once and
restores its snapshot per repetition, so what a repetition measures must be exactly what a
fresh sequence that prefilled the context would compute (checked on the logits); llama.cpp
re-prefills the context untimed. End to end: names, CSV, frontier plot, schema, both engines."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from click.testing import CliRunner

from ds4kit.bench.engine_bench import depth_tokens, make_tests, parse_depths
from ds4kit.bench.engine_runners import Ds4kitRunner
from ds4kit.bench.engine_worker import run_rep
from ds4kit.cli import main
from ds4kit.reports.schema import validate_report
from ds4kit.synth import preset, write_target


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench_depth") / "tiny.gguf"
    write_target(path, preset("tiny"), seed=3, progress=False)
    return path


def test_tests_at_depths_share_tokens_and_the_context_is_one_prefix():
    tests = make_tests([8], [4], n_vocab=129280, seed=0, depths=(0, 64, 16))
    assert [t["name"] for t in tests] == ["pp8", "tg4", "pp8@d64", "tg4@d64", "pp8@d16", "tg4@d16"]
    assert [t["depth"] for t in tests] == [0, 0, 64, 64, 16, 16]
    assert tests[0]["tokens"] == tests[2]["tokens"] == tests[4]["tokens"]  # the test's own tokens
    assert make_tests([8], [4], n_vocab=129280, seed=0)[0]["tokens"] == tests[0]["tokens"]  # -d does not move them
    ctx = depth_tokens((0, 64, 16), n_vocab=129280, seed=0)
    assert sorted(ctx) == ["16", "64"] and len(ctx["64"]) == 64 and ctx["64"][:16] == ctx["16"]
    assert ctx["64"][:8] != tests[0]["tokens"]  # its own stream, not the test's tokens


def test_parse_depths():
    assert parse_depths("0,2048,0") == [0, 2048]
    for bad, needle in (("x", "not an integer"), ("-1", ">= 0"), ("", "at least one")):
        with pytest.raises(ValueError, match=needle):
            parse_depths(bad)


class _Recording:
    """A runner that records what run_rep asks of it."""

    def __init__(self):
        self.calls = []

    def new_sequence(self, speculative=False):
        self.calls.append(("new",))

    def at_depth(self, d, tokens, speculative=False):
        self.calls.append(("depth", d, len(tokens)))

    def prefill(self, tokens):
        self.calls.append(("prefill", len(tokens)))

    def decode(self, token):
        self.calls.append(("decode", token))


def test_run_rep_sets_up_the_depth_before_the_timer():
    tests = make_tests([8], [2], n_vocab=1000, seed=0, depths=(32,))
    ctx = depth_tokens((32,), n_vocab=1000, seed=0)
    r = _Recording()
    run_rep(r, tests[0], ctx)
    assert r.calls == [("depth", 32, 32), ("prefill", 8)]
    r = _Recording()
    run_rep(r, tests[1], ctx)
    assert r.calls[0] == ("depth", 32, 32) and [c[0] for c in r.calls[1:]] == ["decode"] * 3


def test_ds4kit_runner_restores_exactly_what_a_fresh_prefill_computes(tiny_model):
    from ds4kit.targets import TargetOptions

    opts = TargetOptions(model=str(tiny_model), backend="cpu", threads=1)
    runner = Ds4kitRunner(dict(opts.spec(), model=str(tiny_model), threads=1), n_ctx=256, prefill_mode="batched")
    ctx = depth_tokens((48,), n_vocab=1000, seed=1)["48"]
    rows = []
    for _ in range(3):  # the first call prefills and snapshots; the others restore
        runner.at_depth(48, ctx)
        assert runner._session.pos == 48
        rows.append([np.asarray(runner._session.decode(t)) for t in (5, 6, 7)])
    fresh = runner._target.session(256)
    fresh.prefill(ctx, mode="batched")
    ref = [np.asarray(fresh.decode(t)) for t in (5, 6, 7)]
    for got in rows:
        for a, b in zip(got, ref):
            assert np.array_equal(a, b)
    assert len(runner._depth_snapshots) == 1


def test_cli_depths_end_to_end(tiny_model, tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is needed for the side-by-side run")
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["bench", "engine", str(tiny_model), "-p", "8", "-n", "4", "-d", "0,64", "-r", "2",
                                    "-t", "1", "--no-progress", "--probe-mb", "16", "--out", str(out)])
    assert res.exit_code == 0, res.output + repr(res.exception)
    report = json.loads((out / "report.json").read_text())
    validate_report(report, "bench-engine")
    r = report["results"]
    assert r["settings"]["depths"] == [0, 64]
    assert r["settings"]["llama_gpu_layers"] == 0  # --backend cpu: llama.cpp on the CPU too
    assert r["engines"]["llama.cpp"]["info"]["n_gpu_layers"] == 0
    names = {"pp8", "tg4", "pp8@d64", "tg4@d64"}
    for engine in ("ds4kit", "llama.cpp"):
        assert set(r["engines"][engine]["tests"]) == names, engine
    assert set(r["ratios"]) == names
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted({(row["test"], row["n_depth"]) for row in rows}) == sorted(
        {("pp8", "0"), ("tg4", "0"), ("pp8@d64", "64"), ("tg4@d64", "64")})
    assert len(rows) == 2 * 4 * 2
    assert (out / "frontier.png").stat().st_size > 0 and "frontier_plot" in report["files"]
    assert r["settings"]["n_ctx"] >= 64 + 8


@pytest.fixture(scope="module")
def tiny_with_drafter(tmp_path_factory):
    from ds4kit.synth import write_drafter

    d = tmp_path_factory.mktemp("bench_dspark")
    cfg = preset("tiny")
    write_target(d / "t.gguf", cfg, seed=4, progress=False)
    write_drafter(d / "d.gguf", cfg, seed=4, progress=False)
    return d / "t.gguf", d / "d.gguf"


def test_cli_dspark_off_and_on(tiny_with_drafter, tmp_path):
    """--drafter: genN and genN+dspark at each depth, ds4kit only; the report's speculation says
    the speedup and that both generated the same tokens (greedy speculative decoding is lossless)."""
    target, drafter = tiny_with_drafter
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["bench", "engine", str(target), "--drafter", str(drafter), "--spec-width", "4",
                                    "-p", "", "-n", "6", "-d", "0,20", "-r", "2", "-t", "1", "--engines", "ds4kit",
                                    "--no-progress", "--probe-mb", "16", "--out", str(out)])
    assert res.exit_code == 0, res.output + repr(res.exception)
    report = json.loads((out / "report.json").read_text())
    validate_report(report, "bench-engine")
    r = report["results"]
    names = {"tg6", "gen6", "gen6+dspark", "tg6@d20", "gen6@d20", "gen6+dspark@d20"}
    assert set(r["engines"]["ds4kit"]["tests"]) == names
    assert set(r["speculation"]) == {"gen6", "gen6@d20"}
    for name, sp in r["speculation"].items():
        assert sp["tokens_identical"], name
        assert sp["speedup"] == pytest.approx(sp["on_tok_s"] / sp["off_tok_s"])
        assert sp["acceptance_rate"] is None or 0 <= sp["acceptance_rate"] <= 1
    reps = [json.loads(line) for line in (out / "reps.jsonl").read_text().splitlines()]
    gen = [e for e in reps if e["test"].startswith("gen")]
    assert len(gen) == 4 * 2 and all(e["n_tokens"] == 6 for e in gen)
    # at depth 20 the tokens follow the context, so they differ from those of a fresh sequence
    sha = {e["test"]: e["tokens_sha256"] for e in gen}
    assert sha["gen6"] == sha["gen6+dspark"] and sha["gen6@d20"] == sha["gen6+dspark@d20"] != sha["gen6"]
    assert "DSpark" in (out / "summary.md").read_text()


def test_dspark_tests_skip_llama_cpp(tiny_with_drafter, tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is needed for the side-by-side run")
    target, drafter = tiny_with_drafter
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["bench", "engine", str(target), "--drafter", str(drafter), "-p", "", "-n", "4",
                                    "-r", "1", "-t", "1", "--no-progress", "--probe-mb", "16", "--out", str(out)])
    assert res.exit_code == 0, res.output + repr(res.exception)
    r = json.loads((out / "report.json").read_text())["results"]
    assert set(r["engines"]["llama.cpp"]["tests"]) == {"tg4"}
    assert set(r["engines"]["ds4kit"]["tests"]) == {"tg4", "gen4", "gen4+dspark"}
    assert set(r["ratios"]) == {"tg4"}
