"""`ds4kit report ...`: look at run folders."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.group()
def report() -> None:
    """Inspect run folders (report.json, checked against its schema)."""


@report.command("show")
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print report.json as is.")
def show(run_dir: Path, as_json: bool) -> None:
    """Summarise the report in RUN_DIR (validating it against its schema)."""
    from ds4kit.reports.read import ReportReadError, read_report, read_report_json

    try:
        if as_json:
            click.echo(json.dumps(read_report_json(run_dir), indent=2, ensure_ascii=False))
            return
        rep = read_report(run_dir)
    except ReportReadError as exc:
        raise click.ClickException(str(exc)) from None

    from rich.console import Console
    from rich.table import Table

    from ds4kit.reports.show import MAX_ROWS, view_report

    view = view_report(rep)
    # Wide when piped so values (hashes, paths) are not folded mid-word.
    console = Console(width=None if sys.stdout.isatty() else 200)
    for line in view.lines:
        console.print(line)
    if view.rows:
        table = Table("result", "value", show_lines=False)
        for k, v in view.rows[:MAX_ROWS]:
            table.add_row(_plain(k), _plain(v))
        console.print(table)
        if len(view.rows) > MAX_ROWS:
            console.print(f"... {len(view.rows) - MAX_ROWS} more (use --json)")
    for line in view.files:
        console.print(line, markup=False)


def _plain(text: str):
    from rich.text import Text

    return Text(text)  # values are data, not markup


def _register() -> None:
    from ds4kit.cli.report_diff_cmd import diff

    report.add_command(diff)


_register()
