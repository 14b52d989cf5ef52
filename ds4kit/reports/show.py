"""What `ds4kit report show` prints for a report, tolerant of any shape: a field of the wrong type
is shown as it is (or flagged), never a reason to stop."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rich.markup import escape

from ds4kit.reports.schema import SchemaError, validate_report

MAX_ROWS = 60


@dataclass
class ReportView:
    lines: list[str] = field(default_factory=list)         # rich markup, one per line
    rows: list[tuple[str, str]] = field(default_factory=list)  # flattened results
    files: list[str] = field(default_factory=list)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]], depth: int = 0) -> None:
    if isinstance(value, dict) and value and depth < 2:
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out, depth + 1)
    else:
        out.append((prefix or "(results)", _text(value)))


def _sha_text(ds4: dict[str, Any]) -> str:
    sha = ds4.get("git_sha")
    if not sha:
        return "no git sha"
    source = ds4.get("git_sha_source")
    return f"{sha}, from the {source}" if source else str(sha)


def _warning_line(w: Any) -> str:
    if isinstance(w, dict) and isinstance(w.get("code"), str) and "message" in w:
        return f"[bold red]WARNING[/bold red] {escape('[' + w['code'] + ']')} {escape(_text(w['message'], 2000))}"
    return f"[bold red]WARNING[/bold red] (malformed entry) {escape(_text(w, 2000))}"


def view_report(rep: dict[str, Any]) -> ReportView:
    view = ReportView()
    try:
        validate_report(rep)
        valid = "[green]valid[/green]"
    except SchemaError as exc:
        valid = f"[red]INVALID[/red]: {escape(str(exc))}"
    add = view.lines.append
    add(f"[bold]{escape(_text(rep.get('kind')))}[/bold] report  status={escape(_text(rep.get('status')))}  "
        f"schema {valid}")
    man = _obj(rep.get("manifest"))
    ds4 = _obj(man.get("ds4kit"))
    add(f"started {escape(_text(rep.get('started_at')))}  duration {escape(_text(rep.get('duration_s')))} s  "
        f"ds4kit {escape(_text(ds4.get('version')))} ({escape(_sha_text(ds4))})")
    host = _obj(man.get("host"))
    add(escape(f"host {_text(host.get('hostname'))}: {_text(host.get('cpu'))}, {_text(host.get('os'))}"))
    model = _obj(man.get("model"))
    if model:
        add(escape(f"model {_text(model.get('path'), 500)} ({_text(model.get('size_bytes'))} bytes, "
                   f"sha256 {model.get('sha256') or 'not computed'})"))
    target = _obj(man.get("target"))
    if target:
        numerics = ", ".join(f"{k}={v}" for k, v in _obj(target.get("numerics")).items())
        add(escape(f"target {_text(target.get('kind'))}: backend {_text(target.get('backend_resolved') or target.get('backend'))}, "
                   f"threads {_text(target.get('threads'))}" + (f", {numerics}" if numerics else "")))
    card = _obj(man.get("card"))
    if card:
        add(escape(f"card {_text(card.get('name'))} via {_text(card.get('source'))}"
                   + (f" ({card.get('path')})" if card.get("path") else "")))
    warnings = rep.get("warnings", [])
    for w in warnings if isinstance(warnings, list) else [warnings]:
        view.lines.append(_warning_line(w))
    interrupt = _obj(rep.get("interrupt"))
    if interrupt:
        add(escape(f"interrupted by {_text(interrupt.get('signal'))} (exit code {_text(interrupt.get('exit_code'))})"))
    err = rep.get("error")
    if err:
        e = _obj(err)
        add("[red]error[/red] " + escape(f"{_text(e.get('type'))}: {_text(e.get('message'), 2000)}" if e else _text(err)))
    if "results" in rep:
        _flatten("", rep["results"], view.rows)
    files = rep.get("files", {})
    if isinstance(files, dict):
        view.files = [f"file {label}: {_text(name, 500)}" for label, name in files.items()]
    elif files:
        view.files = [f"files (malformed): {_text(files)}"]
    return view
