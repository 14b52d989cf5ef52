"""Grading: every sample in its own sandbox, a verdict line per task in items.jsonl.

Samples are evalplus's format: {"task_id", "solution"} (the whole program) or {"task_id",
"completion"} (appended to the problem's prompt). Tasks already in items.jsonl are skipped
(--resume); each verdict is appended (fsynced) as soon as its sandbox ends.
"""
from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable

from ds4kit.evals.humaneval.categories import classify
from ds4kit.evals.humaneval.dataset import Dataset
from ds4kit.evals.humaneval.sandbox import Sandbox
from ds4kit.reports.items import ItemLog
from ds4kit.reports.jsonl import read_jsonl_objects


@dataclass(frozen=True)
class TimeLimits:
    check_s: float = 10.0              # the original check() tests, as a whole
    min_test_s: float = 1.0            # evalplus: each HumanEval+ test gets max(this, factor * reference)
    reference_factor: float = 4.0
    phase_max_s: float = 60.0          # evalplus: at most this for all of a phase's tests


def program(sample: dict[str, Any], problem: dict[str, Any]) -> str:
    if isinstance(sample.get("solution"), str):
        return sample["solution"]
    return problem["prompt"] + sample["completion"]


def read_samples(path, problems: dict[str, dict[str, Any]], flag: str = "--samples") -> dict[str, dict[str, Any]]:
    """{task_id: sample}; a clear error naming the line for anything that is not a sample of
    these problems. One sample per task (pass@1)."""
    from ds4kit.errors import ConfigError

    try:
        rows = read_jsonl_objects(path)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}", flag) from None
    total = sum(1 for line in open(path, encoding="utf-8", errors="replace") if line.strip())
    if len(rows) != total:
        raise ConfigError(f"{path}, line {len(rows) + 1}: not a JSON object (or a torn line)", flag)
    samples: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(rows, 1):
        task = row.get("task_id")
        if task not in problems:
            raise ConfigError(f"{path}, line {n}: task_id {task!r} is not a problem of the dataset", flag)
        if not isinstance(row.get("solution"), str) and not isinstance(row.get("completion"), str):
            raise ConfigError(f"{path}, line {n}: a sample needs a string 'solution' or 'completion'", flag)
        if task in samples:
            raise ConfigError(f"{path}, line {n}: a second sample for {task} (pass@1 grades one per task)", flag)
        samples[task] = row
    if not samples:
        raise ConfigError(f"{path}: no samples in it", flag)
    return samples


def _job(dataset: Dataset, problem: dict[str, Any], code: str, limits: TimeLimits) -> tuple[dict, float]:
    if dataset.base_only:
        job = {"mode": "base-only", "code": code, "entry_point": problem["entry_point"],
               "problem": {"test": problem["test"]}, "time_limit": limits.check_s}
        return job, limits.check_s + 15
    keep = ("prompt", "canonical_solution", "entry_point", "base_input", "plus_input", "atol")
    job = {"mode": "plus", "code": code, "entry_point": problem["entry_point"],
           "problem": {k: problem[k] for k in keep if k in problem}, "min_time_limit": limits.min_test_s,
           "gt_time_limit_factor": limits.reference_factor, "max_phase_s": limits.phase_max_s}
    return job, 2 * (limits.phase_max_s + 2) + 60  # two phases and the reference outputs


def grade_one(box: Sandbox, dataset: Dataset, task_id: str, sample: dict[str, Any], limits: TimeLimits) -> dict:
    problem = dataset.problems[task_id]
    code = program(sample, problem)
    job, wall = _job(dataset, problem, code, limits)
    outcome = box.run(job, wall_s=wall)
    verdict = classify(outcome, code=sample.get("reply") or code, truncated=bool(sample.get("truncated")),
                       base_only=dataset.base_only)
    return {"task_id": task_id, **verdict, "truncated": bool(sample.get("truncated")),
            "seconds": outcome.seconds, "events": outcome.events[:8], "exit": outcome.exit,
            "syntax_error": outcome.syntax_error,
            "tests": {k: {kk: vv for kk, vv in v.items()} for k, v in outcome.phases.items()}}


def grade_all(box: Sandbox, dataset: Dataset, samples: dict[str, dict[str, Any]], log: ItemLog, *,
              limits: TimeLimits, jobs: int, should_stop: Callable[[], bool],
              on_done: Callable[[dict], None] = lambda r: None) -> bool:
    """Grade every sample not in `log`, `jobs` sandboxes at a time; False when stopped early
    (the sandboxes already running finish and are kept)."""
    done = log.done_keys()
    todo = [(t, s) for t, s in samples.items() if t not in done]
    stopped = False
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        running: set = set()
        queue = iter(todo)
        while True:
            while not stopped and len(running) < max(1, jobs):
                nxt = next(queue, None)
                if nxt is None:
                    break
                if should_stop():
                    stopped = True
                    break
                running.add(pool.submit(grade_one, box, dataset, nxt[0], nxt[1], limits))
            if not running:
                break
            finished, running = wait(running, return_when=FIRST_COMPLETED, timeout=0.5)
            running = set(running)
            for fut in finished:
                record = fut.result()
                log.append(record)
                on_done(record)
            if should_stop():
                stopped = True
    return not stopped
