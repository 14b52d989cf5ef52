"""The embedded target and the one helper that builds targets from options, on the tiny model:
its numerics and backend reach the engine, its capabilities are declared, and the synthetic
model fallback is the same for every command."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.engine import Model, available_backends
from ds4kit.errors import ConfigError
from ds4kit.targets import Capabilities, EmbeddedTarget, Numerics, Target, TargetOptions, build_target

PROMPT = "The quick brown fox jumps over the lazy dog. " * 6  # long enough for compressed rows and the indexer


def _prefill(session, model):
    return session.prefill(model.encode(PROMPT), "exact")


def test_numerics_reach_the_engine(tiny_target):
    ref = Model.load(tiny_target, threads=1)
    for fp8, fp4 in ((True, True), (False, True), (True, False), (False, False)):
        target = build_target(TargetOptions(model=tiny_target, threads=1, numerics=Numerics(fp8, fp4)))
        target.load()
        got = _prefill(target.session(512), target.model)
        want = _prefill(ref.session(512, fp8_kv=fp8, indexer_fp4=fp4), ref)
        assert np.array_equal(got, want), (fp8, fp4)
        if (fp8, fp4) != (True, True):  # each rounding changes the logits, so a flag that is lost shows
            assert not np.array_equal(got, _prefill(ref.session(512), ref)), (fp8, fp4)


def test_describe_capabilities_and_protocol(tiny_target):
    target = build_target(TargetOptions(model=tiny_target, threads=2, numerics=Numerics(fp8_kv=False)))
    assert isinstance(target, EmbeddedTarget) and isinstance(target, Target)
    before = target.describe()
    assert before["backend_resolved"] is None and before["threads"] == 2
    target.load()
    d = target.describe()
    assert d["kind"] == "embedded" and d["backend"] == "auto"
    assert d["backend_resolved"] == target.model.backend and d["threads"] == target.model.threads == 2
    assert d["numerics"] == {"fp8_kv": False, "indexer_fp4": True}
    caps = target.capabilities
    assert (caps.logits, caps.verify, caps.snapshot, caps.rewind, caps.drafter) == (True, True, True, True, True)
    assert d["capabilities"] == caps.as_dict()
    # The declared capabilities hold: verify rows equal one-by-one decoding, a snapshot restores.
    ids = target.tokenize(PROMPT)
    s = target.session(512)
    s.prefill(ids[:-3], "exact")
    snap = s.snapshot()
    rows = s.verify(ids[-3:])
    s.restore(snap)
    assert all(np.array_equal(rows[i], s.decode(t)) for i, t in enumerate(ids[-3:]))
    assert target.detokenize(ids) == PROMPT and target.token_id("<｜end▁of▁sentence｜>") >= 0


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs to pin a child to one")
def test_default_threads_are_the_cpus_this_process_may_use(tiny_target):
    # A child pinned to one CPU (as under taskset or a container's quota): one thread, not cpu_count().
    code = ("from ds4kit.targets import TargetOptions, build_target\n"
            f"t = build_target(TargetOptions(model={str(tiny_target)!r})); t.load()\n"
            "print(t.model.threads, t.describe()['threads'])\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         preexec_fn=lambda: os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1"]


def test_capabilities_missing_lists_what_a_job_cannot_measure():
    caps = Capabilities(token_ids=True)
    assert caps.missing({"token_ids": "ids", "top_logprobs": "top-k"}) == [{"capability": "top_logprobs",
                                                                            "what": "top-k"}]
    with pytest.raises(ValueError, match="unknown capabilities"):
        caps.missing({"telepathy": "x"})


@pytest.mark.parametrize("options, flag", [
    (TargetOptions(model="/nonexistent.gguf"), "--model"),
    (TargetOptions(backend="metal"), "--backend"),
    (TargetOptions(threads=0), "--threads"),
    (TargetOptions(model="/nonexistent.gguf", model_flag="MODEL"), "MODEL"),
])
def test_bad_options_name_their_flag(options, flag):
    with pytest.raises(ConfigError) as err:
        build_target(options)
    assert err.value.option == flag


@pytest.mark.skipif(available_backends().get("cuda") == "ok", reason="needs an engine built without CUDA")
def test_backend_flag_reaches_the_engine(tiny_target, tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["generate", "-m", str(tiny_target), "-p", "Hi", "--backend", "cuda",
                                    "--max-tokens", "2", "--out", str(out)])
    assert res.exit_code == 2 and "DS4KIT_GPU=cuda" in res.output, res.output
    rep = json.loads((out / "report.json").read_text())
    assert rep["status"] == "failed" and rep["manifest"]["target"]["backend"] == "cuda"


def test_generate_records_numerics_and_uses_them(tiny_target, tmp_path):
    def gen(out, *flags):
        res = CliRunner().invoke(main, ["generate", "-m", str(tiny_target), "-p", PROMPT, "--greedy", "-q",
                                        "--max-tokens", "3", "--logprobs", "2", "--threads", "1", "--out", str(out),
                                        *flags])
        assert res.exit_code == 0, res.output
        return json.loads((out / "report.json").read_text())

    plain = gen(tmp_path / "llama-like", "--no-fp8-kv", "--no-indexer-fp4")
    target = plain["manifest"]["target"]
    assert target["numerics"] == {"fp8_kv": False, "indexer_fp4": False} and target["threads"] == 1
    # The report's first logprob row is that of a session with the same options, not the default's.
    model = Model.load(tiny_target, threads=1)
    ids = plain["results"]["prompt"]["ids"]
    for fp8, fp4 in ((False, False), (True, True)):
        x = model.session(512, fp8_kv=fp8, indexer_fp4=fp4).prefill(ids, "exact").astype(np.float64)
        lp = x - (x.max() + np.log(np.exp(x - x.max()).sum()))
        first = [json.loads(line) for line in (tmp_path / "llama-like" / "logprobs.jsonl").open()][0]
        same = abs(first["top"][0][1] - lp.max()) < 1e-9
        assert same == (not fp8 and not fp4)
    default = gen(tmp_path / "default")
    assert default["manifest"]["target"]["numerics"] == {"fp8_kv": True, "indexer_fp4": True}


def test_one_fallback_serves_every_command(tiny_target, tmp_path, monkeypatch):
    """Without a model, generate and model info use the cached demo model and bench engine the
    medium one, through the same helper; the files are placed first, so nothing is written."""
    from ds4kit.synth.demo import synthetic_model_file

    monkeypatch.setenv("DS4KIT_CACHE_DIR", str(tmp_path / "cache"))
    demo = synthetic_model_file("demo")
    demo.parent.mkdir(parents=True)
    shutil.copy(tiny_target, demo)
    stamp = demo.stat().st_mtime_ns

    res = CliRunner().invoke(main, ["generate", "-p", "Hi", "--max-tokens", "2", "-q", "--out", str(tmp_path / "g")])
    assert res.exit_code == 0, res.output
    assert "(no --model: using the built-in synthetic demo model" in res.output and str(demo) in res.output
    rep = json.loads((tmp_path / "g" / "report.json").read_text())
    assert rep["manifest"]["model"]["path"] == str(demo.resolve())
    assert rep["manifest"]["target"]["synthetic_model"] == "demo"
    assert [w for w in rep["warnings"] if w["code"] == "demo-model"]

    res = CliRunner().invoke(main, ["model", "info", "--no-hash", "--out", str(tmp_path / "i")])
    assert res.exit_code == 0, res.output
    assert "(no MODEL: using the built-in synthetic demo model" in res.output
    assert json.loads((tmp_path / "i" / "report.json").read_text())["manifest"]["model"]["path"] == str(demo.resolve())

    medium = synthetic_model_file("medium")
    shutil.copy(tiny_target, medium)
    target = build_target(TargetOptions(fallback="medium", model_flag="MODEL"), say=lambda m: None)
    assert target.path == medium and target.synthetic_model == "medium"
    assert demo.stat().st_mtime_ns == stamp  # found, not rewritten
