"""How a command ends after its job: the report's path on stderr and the exit status."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ds4kit.reports.read import read_report


def exit_code(report: dict[str, Any]) -> int:
    """0 for a finished run; 128 + the signal for an interrupted one (130 SIGINT, 143 SIGTERM); 1 otherwise."""
    status = report.get("status")
    if status == "ok":
        return 0
    if status == "interrupted":
        return int((report.get("interrupt") or {}).get("exit_code") or 130)
    return 1


def finish_command(report_path: Path) -> dict[str, Any]:
    """Says where the report is; exits with the run's status unless it finished."""
    report = read_report(report_path)
    click.echo(f"report: {report_path}", err=True)
    code = exit_code(report)
    if code:
        sys.exit(code)
    return report
