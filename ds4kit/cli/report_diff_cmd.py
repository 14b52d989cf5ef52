"""`ds4kit report diff A B`: two run folders (or report.json files) of one kind, compared."""
from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("diff")
@click.argument("a", type=click.Path(exists=True, path_type=Path))
@click.argument("b", type=click.Path(exists=True, path_type=Path))
@click.option("--format", "-o", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True,
              help="Markdown for people, JSON for scripts.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the comparison to this file.")
def diff(a: Path, b: Path, fmt: str, out: Path | None) -> None:
    """Compare run A with run B (B - A) with paired statistics for their kind: McNemar on
    per-task pass/fail (eval humaneval), bootstrap intervals for throughput (bench engine,
    generate), peaks (thermal). Reports of different kinds are refused."""
    from ds4kit.reports.atomic import atomic_write_text
    from ds4kit.reports.diff import DiffError, diff_reports, render_markdown

    try:
        d = diff_reports(a, b)
    except DiffError as exc:
        raise click.ClickException(str(exc)) from None
    text = render_markdown(d) if fmt == "md" else json.dumps(d, indent=2, ensure_ascii=False) + "\n"
    click.echo(text, nl=False)
    if out is not None:
        atomic_write_text(out, text)
