"""Reading a report.json back: one clear error for a file that is not a report, never a traceback."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class ReportReadError(ValueError):
    """The file is missing, unreadable, not JSON, or not a JSON object (the message names it)."""


def report_path(path: str | Path) -> Path:
    """A run folder's report.json, or the file itself."""
    path = Path(path)
    return path / "report.json" if path.is_dir() else path


def read_report_json(path: str | Path) -> Any:
    """The parsed JSON of a report file, whatever its shape."""
    path = report_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportReadError(f"{path}: no report.json here") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportReadError(f"{path}: cannot be read ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportReadError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise ReportReadError(f"{path}: JSON nested too deeply") from None


def read_report(path: str | Path) -> dict[str, Any]:
    """The report as a dict; ReportReadError unless the file holds a JSON object."""
    doc = read_report_json(path)
    if not isinstance(doc, dict):
        raise ReportReadError(f"{report_path(path)}: not a ds4kit report (a JSON {_json_type(doc)}, "
                              "where a report is a JSON object)")
    return doc


def _json_type(doc: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(doc), "number")
