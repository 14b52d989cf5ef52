"""`ds4kit report diff A B`: paired comparison of two reports of one kind.

    from ds4kit.reports.diff import diff_reports, render_markdown
    d = diff_reports("runs/a", "runs/b")      # DiffError for different kinds, unknown kinds, bad files
    print(render_markdown(d))

Kinds that describe a thing (a model file, a card) are compared field by field: one line in
field_changes.KINDS each. Every other kind has its module, `kind_<kind with - as _>.py` in this
package, found by name: adding a kind is one file holding

    KIND = "probe-needle"
    def diff(a: dict, b: dict, a_dir: Path, b_dir: Path) -> dict   # JSON-ready comparison
    def markdown(d: dict) -> str                                   # the same as markdown

where a and b are the two schema-valid reports (a_dir/b_dir their run folders, for per-item files).
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from pathlib import Path
from typing import Any


class DiffError(ValueError):
    """Two reports that cannot be compared (the message says why and names the files)."""


@lru_cache(maxsize=None)
def differs() -> dict[str, Any]:
    """Report kind -> its differ (a kind_*.py module, or a field_changes.FieldDiffer)."""
    from ds4kit.reports.diff import field_changes

    found: dict[str, Any] = {k: field_changes.FieldDiffer(k, ignore) for k, ignore in field_changes.KINDS.items()}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("kind_"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            found[module.KIND] = module
    return found


def _load(path: str | Path) -> tuple[dict[str, Any], Path]:
    from ds4kit.reports.read import ReportReadError, read_report, report_path
    from ds4kit.reports.schema import SchemaError, validate_report

    file = report_path(path)
    try:
        rep = read_report(file)
        validate_report(rep)
    except ReportReadError as exc:
        raise DiffError(str(exc)) from None
    except SchemaError as exc:
        raise DiffError(f"{file}: {exc}") from None
    if rep["status"] not in ("ok", "interrupted"):
        raise DiffError(f"{file}: a {rep['status']} run (only finished or interrupted runs have results to compare)")
    return rep, file.parent


def _side(rep: dict[str, Any], path: Path) -> dict[str, Any]:
    m = rep["manifest"]
    return {"path": str(path), "status": rep["status"], "started_at": rep["started_at"],
            "git_sha": (m.get("ds4kit") or {}).get("git_sha"), "model": (m.get("model") or {}).get("path"),
            "host": (m.get("host") or {}).get("hostname") or (m.get("host") or {}).get("cpu")}


def diff_reports(a_path: str | Path, b_path: str | Path) -> dict[str, Any]:
    a, a_dir = _load(a_path)
    b, b_dir = _load(b_path)
    if a["kind"] != b["kind"]:
        raise DiffError(f"{a_dir} holds a report of kind {a['kind']!r} and {b_dir} one of kind {b['kind']!r}: "
                        "report diff compares two reports of the same kind")
    module = differs().get(a["kind"])
    if module is None:
        raise DiffError(f"no differ for {a['kind']} reports yet; report diff knows {', '.join(sorted(differs()))}")
    return {"kind": a["kind"], "a": _side(a, a_dir), "b": _side(b, b_dir),
            "diff": module.diff(a, b, a_dir, b_dir)}


def render_markdown(d: dict[str, Any]) -> str:
    head = [f"# ds4kit report diff: {d['kind']}", "",
            f"- A: {d['a']['path']} ({d['a']['status']}, {d['a']['started_at']}, git {d['a']['git_sha']})",
            f"- B: {d['b']['path']} ({d['b']['status']}, {d['b']['started_at']}, git {d['b']['git_sha']})", ""]
    return "\n".join(head) + "\n" + differs()[d["kind"]].markdown(d["diff"])
