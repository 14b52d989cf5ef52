"""A run folder and its report.json.

    with start_run("model-info", out=None) as run:
        run.set_model(...); run.warn("card-fallback", "...")
        run.finish({"...": ...}, summary_md="...")

The report is written at start (status "running") and again at the end; an
exception inside the block records status "failed" with the error before it
propagates, so a crash still leaves a valid, truthful report.
"""
from __future__ import annotations

import datetime as _dt
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ds4kit.errors import ConfigError
from ds4kit.reports.atomic import atomic_write_json, atomic_write_text
from ds4kit.reports.items import ItemLog
from ds4kit.reports.manifest import build_manifest
from ds4kit.reports.schema import validate_report

DEFAULT_RUNS_ROOT = Path("runs")


@dataclass(frozen=True)
class Warning_:
    code: str
    message: str


def _utc_now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def _iso(t: _dt.datetime) -> str:
    return t.isoformat(timespec="seconds").replace("+00:00", "Z")


def _check_creatable(folder: Path, what: str) -> None:
    """`folder` does not exist yet: its nearest existing ancestor must be a writable folder."""
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(f"cannot create {what} {folder}: {parent} is not a folder", "--out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot create {what} {folder}: {parent} is not writable", "--out")


def check_run_folder(out: str | Path | None, resume: bool = False) -> None:
    """ConfigError naming --out unless a run folder can be made at `out` (None: under runs/);
    called by every job's config check before anything is loaded, and again by Run."""
    if out is None:
        if resume:
            raise ConfigError("--resume needs --out naming the run folder to continue", "--out")
        root = DEFAULT_RUNS_ROOT
        if root.exists():
            if not root.is_dir():
                raise ConfigError(f"the default run folder root {root.resolve()} is not a folder; "
                                  "pass --out DIR", "--out")
        else:
            _check_creatable(root.resolve(), "the default run folder root")
        return
    folder = Path(out)
    if not folder.exists():
        _check_creatable(folder, "run folder")
        return
    if not folder.is_dir():
        raise ConfigError(f"{folder} exists and is not a folder", "--out")
    if (folder / "report.json").exists() and not resume:
        raise ConfigError(f"{folder} already holds a report; pass --resume to continue it (where the command "
                          "has it) or choose another --out", "--out")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"run folder {folder} is not writable", "--out")


def _new_folder(kind: str, root: Path) -> Path:
    stamp = _utc_now().strftime("%Y%m%dT%H%M%SZ")
    base = root / f"{kind}-{stamp}"
    candidate, n = base, 1
    while True:
        try:
            candidate.mkdir(parents=True, exist_ok=False)
            return candidate
        except FileExistsError:
            n += 1
            candidate = base.with_name(f"{base.name}-{n}")


class Run:
    def __init__(self, kind: str, out: str | Path | None = None, *, resume: bool = False,
                 command: list[str] | None = None, quiet_warnings: bool = False):
        self.kind = kind
        self.quiet_warnings = quiet_warnings
        check_run_folder(out, resume)
        if out is None:
            self.folder = _new_folder(kind, DEFAULT_RUNS_ROOT)
        else:
            self.folder = Path(out)
            self.folder.mkdir(parents=True, exist_ok=True)
        self._t0 = time.monotonic()
        self.report: dict[str, Any] = {
            "schema_version": 1,
            "kind": kind,
            "status": "running",
            "started_at": _iso(_utc_now()),
            "finished_at": None,
            "duration_s": None,
            "manifest": build_manifest(command=command),
            "warnings": [],
            "results": {},
            "files": {},
            "error": None,
            "interrupt": None,
        }
        self._write_report()

    # -- manifest ---------------------------------------------------------
    def set_model(self, model: dict[str, Any] | None, *, role: str = "model") -> None:
        self.report["manifest"][role] = model

    def set_target(self, target: dict[str, Any] | None) -> None:
        """What the job talked to (ds4kit.targets: kind, backend, threads, numerics, capabilities)."""
        self.report["manifest"]["target"] = target

    def set_card(self, card: dict[str, Any] | None) -> None:
        self.report["manifest"]["card"] = card
        if card and card.get("warning"):
            self.warn("model-card", card["warning"])

    # -- content ----------------------------------------------------------
    def warn(self, code: str, message: str) -> None:
        """Record a warning in the report and say it loudly on stderr."""
        entry = {"code": code, "message": message}
        if entry in self.report["warnings"]:
            return
        self.report["warnings"].append(entry)
        if not self.quiet_warnings:
            print(f"ds4kit WARNING [{code}]: {message}", file=sys.stderr)

    def path(self, name: str) -> Path:
        return self.folder / name

    def add_file(self, label: str, name: str) -> Path:
        self.report["files"][label] = name
        return self.folder / name

    def items(self, name: str = "items.jsonl", key: str = "id") -> ItemLog:
        self.report["files"].setdefault("items", name)
        return ItemLog(self.folder / name, key=key)

    # -- lifecycle --------------------------------------------------------
    def _write_report(self) -> None:
        validate_report(self.report, self.kind)
        atomic_write_json(self.folder / "report.json", self.report)

    def finish(self, results: dict[str, Any], *, status: str = "ok", summary_md: str | None = None,
               interrupt: dict[str, Any] | None = None) -> Path:
        """status "interrupted" takes `interrupt` (ds4kit.interrupts.StopSignals.record())."""
        self.report["results"] = results
        self.report["status"] = status
        self.report["interrupt"] = interrupt
        self.report["finished_at"] = _iso(_utc_now())
        self.report["duration_s"] = round(time.monotonic() - self._t0, 3)
        summary = summary_md if summary_md is not None else ""
        atomic_write_text(self.folder / "summary.md", self._summary_header() + summary)
        self.report["files"].setdefault("summary", "summary.md")
        self._write_report()
        return self.folder / "report.json"

    def fail(self, exc: BaseException, status: str = "failed", interrupt: dict[str, Any] | None = None) -> None:
        self.report["status"] = status
        self.report["interrupt"] = interrupt
        self.report["finished_at"] = _iso(_utc_now())
        self.report["duration_s"] = round(time.monotonic() - self._t0, 3)
        self.report["error"] = {"type": type(exc).__name__, "message": str(exc) or repr(exc)}
        try:
            self._write_report()
        except Exception:
            # The partial results may not satisfy the schema; keep the error visible anyway.
            atomic_write_json(self.folder / "report.json", self.report)

    def _summary_header(self) -> str:
        lines = [f"# ds4kit {self.kind}", "", f"- status: {self.report['status']}",
                 f"- started: {self.report['started_at']}"]
        model = self.report["manifest"].get("model")
        if model:
            lines.append(f"- model: {model.get('path')}")
        for w in self.report["warnings"]:
            lines.append(f"- **WARNING [{w['code']}]**: {w['message']}")
        return "\n".join(lines) + "\n\n"

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is not None and self.report["status"] == "running":
            if isinstance(exc, KeyboardInterrupt):
                from ds4kit.interrupts import interrupt_record

                self.fail(exc, status="interrupted", interrupt=interrupt_record(exc))
            else:
                self.fail(exc)
        return False


def start_run(kind: str, out: str | Path | None = None, **kwargs: Any) -> Run:
    return Run(kind, out, **kwargs)
