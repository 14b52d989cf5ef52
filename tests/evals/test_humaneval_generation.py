"""The generation half of `ds4kit eval humaneval` on the tiny synthetic model (random weights:
the code is garbage, so these tests check the machinery): budgets from the model card,
truncation detected and counted, the thinking budget forced, and a kill -9 at any moment
loses no finished task (a real child process, killed during generation and during grading)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from humaneval_fixtures import REPO, ds4kit, env
from ds4kit.evals.humaneval.generation import derive_budgets
from ds4kit.reports.schema import validate_report

FAMILY_CARD = REPO / "ds4kit" / "cards" / "bundled" / "deepseek4.family.json"


@pytest.fixture(scope="module")
def small_card(tmp_path_factory) -> Path:
    """The family card with budgets small enough for the tiny model: reply 8, tier low 16."""
    card = json.loads(FAMILY_CARD.read_text())
    card.update(name="small budgets", max_tokens=40, complex_problem_max_tokens=40, hard_limit_reply_budget=8,
                reasoning_effort_tiers={"low": 16, "medium": 24, "high": 28, "x-high": 30, "max": 32})
    path = tmp_path_factory.mktemp("card") / "card.json"
    path.write_text(json.dumps(card))
    return path


def test_budgets_follow_the_card():
    card = json.loads(FAMILY_CARD.read_text())
    reply, low = card["hard_limit_reply_budget"], card["reasoning_effort_tiers"]["low"]
    b = derive_budgets(card, thinking=False, effort=None, budget=None)
    assert (b.max_tokens, b.thinking_tokens) == (card["max_tokens"], None)
    b = derive_budgets(card, thinking=True, effort="low", budget=None)
    assert (b.max_tokens, b.thinking_tokens) == (low + reply, low)
    b = derive_budgets(card, thinking=True, effort="low", budget=reply + 100)  # --budget clamps the tier
    assert (b.max_tokens, b.thinking_tokens) == (reply + 100, 100)
    b = derive_budgets(card, thinking=True, effort=None, budget=reply)
    assert b.thinking_tokens == 0 and "THINKING BUDGET IS 0" in b.derivation["warning"]


def _samples(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_truncation_is_detected_and_counted(tiny_target, tmp_path):
    out = tmp_path / "run"
    r = ds4kit("eval", "humaneval", "-m", str(tiny_target), "--limit", "3", "--budget", "6", "--greedy",
               "--threads", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep)
    rows = _samples(out)
    assert [s["task_id"] for s in rows] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    for s in rows:
        assert s["output_tokens"] <= 6
        assert s["truncated"] == (s["stop_reason"] == "max_tokens")
    n_trunc = sum(s["stop_reason"] in ("max_tokens", "context") for s in rows)
    res = rep["results"]
    assert res["generation"]["truncated"] == n_trunc == res["truncated"]
    assert res["generation"]["budgets"]["max_tokens"] == 6
    assert res["generation"]["budgets"]["max_tokens_source"] == "--budget"
    failed_truncated = [t for t in res["tasks"] if t["truncated"] and t["status"] == "fail"]
    assert all(t["category"] == "truncated" for t in failed_truncated)
    assert res["categories"]["truncated"] == len(failed_truncated)


def test_thinking_budget_from_the_card_is_forced(tiny_target, small_card, tmp_path):
    out = tmp_path / "run"
    r = ds4kit("eval", "humaneval", "-m", str(tiny_target), "--card", str(small_card), "--effort", "low",
               "--limit", "2", "--greedy", "--threads", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    gen = json.loads((out / "report.json").read_text())["results"]["generation"]
    assert gen["budgets"]["max_tokens"] == 16 + 8 and gen["budgets"]["thinking_tokens"] == 16
    rows = _samples(out)
    assert all(s["output_tokens"] <= 24 for s in rows)
    hits = [s for s in rows if s["thinking_budget_hit_at"] is not None]
    assert hits  # random weights do not close their thinking by themselves within 16 tokens
    assert all(s["thinking_budget_hit_at"] == 16 and "</think>" in s["raw_output"] for s in hits)
    assert gen["thinking_budget_hits"] == len(hits)


def _count_lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_bytes().splitlines(keepends=True) if line.endswith(b"\n"))
    except FileNotFoundError:
        return 0


def _start(tiny_target, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ds4kit", "eval", "humaneval", "-m", str(tiny_target), "--limit",
                             "6", "--budget", "48", "--greedy", "--threads", "1", "--jobs", "1", "--out", str(out),
                             *extra], env=env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_when(proc: subprocess.Popen, path: Path, lines: int, timeout_s: float = 300) -> None:
    end = time.monotonic() + timeout_s
    while _count_lines(path) < lines:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < end, f"{path} never reached {lines} lines"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_kill_9_during_generation_and_grading_loses_no_finished_task(tiny_target, tmp_path):
    out = tmp_path / "run"
    proc = _start(tiny_target, out)
    _kill_when(proc, out / "samples.jsonl", 2)
    kept = (out / "samples.jsonl").read_bytes()
    kept = kept[:kept.rfind(b"\n") + 1]
    assert kept.count(b"\n") >= 2
    # Resume: generation continues after the finished tasks; kill again once grading has begun.
    proc = _start(tiny_target, out, "--resume")
    _kill_when(proc, out / "items.jsonl", 1)
    assert (out / "samples.jsonl").read_bytes().startswith(kept)  # nothing finished was lost or redone
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["task_id"] for s in samples] == [f"HumanEval/{i}" for i in range(6)]
    time.sleep(2)  # bubblewrap's --die-with-parent: the sandboxes went down with ds4kit
    import psutil

    left = [p.pid for p in psutil.process_iter(["cmdline"]) if any("sandbox_worker.py" in c for c in
                                                                  (p.info["cmdline"] or []))]
    assert left == []
    graded = (out / "items.jsonl").read_bytes()
    graded = graded[:graded.rfind(b"\n") + 1]
    proc = _start(tiny_target, out, "--resume")
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()
    assert (out / "samples.jsonl").read_bytes().startswith(kept)
    assert (out / "items.jsonl").read_bytes().startswith(graded)
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep)
    assert rep["status"] == "ok" and rep["results"]["complete"]
    assert sorted(t["task_id"] for t in rep["results"]["tasks"]) == sorted(f"HumanEval/{i}" for i in range(6))
    assert len((out / "items.jsonl").read_text().splitlines()) == 6


def test_the_model_is_released_before_grading(tiny_target, tmp_path, monkeypatch):
    from ds4kit.evals.humaneval import grading, job
    from ds4kit.targets import TargetOptions, build_target

    target = build_target(TargetOptions(model=tiny_target, threads=1))
    seen = []
    real = grading.grade_one

    def watching(*args, **kwargs):
        seen.append(target.describe()["backend_resolved"])  # None once the model is dropped
        return real(*args, **kwargs)

    monkeypatch.setattr(grading, "grade_one", watching)
    path = job.run(job.HumanEvalConfig(limit=2, budget=4, greedy=True, out=tmp_path / "run"), target,
                   say=lambda m: None)
    assert json.loads(path.read_text())["status"] == "ok"
    assert seen == [None, None]
