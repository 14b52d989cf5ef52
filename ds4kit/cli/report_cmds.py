"""`ds4kit report ...`: look at run folders."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ds4kit.reports.schema import SchemaError, validate_report


def _load(run_dir: Path) -> dict:
    path = run_dir / "report.json" if run_dir.is_dir() else run_dir
    if not path.exists():
        raise click.ClickException(f"{run_dir}: no report.json here")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"{path}: not valid JSON ({exc})") from exc


def _flatten(prefix: str, value, out: list[tuple[str, str]], depth: int = 0) -> None:
    if isinstance(value, dict) and depth < 2:
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out, depth + 1)
    else:
        text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        if len(text) > 100:
            text = text[:97] + "..."
        out.append((prefix, text))


@click.group()
def report() -> None:
    """Inspect run folders (report.json, checked against its schema)."""


@report.command("show")
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print report.json as is.")
def show(run_dir: Path, as_json: bool) -> None:
    """Summarise the report in RUN_DIR (validating it against its schema)."""
    rep = _load(run_dir)
    if as_json:
        click.echo(json.dumps(rep, indent=2, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.table import Table

    # Wide when piped so values (hashes, paths) are not folded mid-word.
    console = Console(width=None if sys.stdout.isatty() else 200)
    try:
        validate_report(rep)
        valid = "[green]valid[/green]"
    except SchemaError as exc:
        valid = f"[red]INVALID[/red]: {exc}"
    console.print(f"[bold]{rep.get('kind')}[/bold] report  status={rep.get('status')}  schema {valid}")
    man = rep.get("manifest", {})
    console.print(f"started {rep.get('started_at')}  duration {rep.get('duration_s')} s  "
                  f"ds4kit {man.get('ds4kit', {}).get('version')} ({man.get('ds4kit', {}).get('git_sha') or 'no git sha'})")
    host = man.get("host", {})
    console.print(f"host {host.get('hostname')}: {host.get('cpu')}, {host.get('os')}")
    if man.get("model"):
        m = man["model"]
        console.print(f"model {m.get('path')} ({m.get('size_bytes')} bytes, sha256 {m.get('sha256') or 'not computed'})")
    if man.get("card"):
        c = man["card"]
        console.print(f"card {c.get('name')} via {c.get('source')}" + (f" ({c.get('path')})" if c.get("path") else ""))
    for w in rep.get("warnings", []):
        console.print(f"[bold red]WARNING[/bold red] [{w['code']}] {w['message']}")
    if rep.get("error"):
        console.print(f"[red]error[/red] {rep['error']['type']}: {rep['error']['message']}")
    rows: list[tuple[str, str]] = []
    _flatten("", rep.get("results", {}), rows)
    if rows:
        table = Table("result", "value", show_lines=False)
        for k, v in rows[:60]:
            table.add_row(k, v)
        console.print(table)
        if len(rows) > 60:
            console.print(f"... {len(rows) - 60} more (use --json)")
    for label, name in rep.get("files", {}).items():
        console.print(f"file {label}: {name}")
