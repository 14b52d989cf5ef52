"""`ds4kit probe margins`: flags -> MarginsConfig and a target -> ds4kit.probes.margins.run -> exit status."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ds4kit.cli.engine_flags import build_target_from_flags, engine_options, model_option, target_option
from ds4kit.cli.thermal_flags import pop_thermal, thermal_flags

EXIT_FAIL = 1  # the probe ran and its verdict is fail


@click.command("margins")
@model_option()
@target_option()
@click.option("--widths", default="1-8", show_default=True,
              help="Verify widths: a list like 1-8, 1,2,4 or 2-4,8 (each in 1..32).")
@click.option("--suite", default="default", show_default=True,
              help="A suite in probes/margins (by name) or the path of a suite JSON file.")
@click.option("--positions", type=int, default=16, show_default=True,
              help="Probe positions per prompt: its last ones that leave room for the widest verify.")
@click.option("--tolerance", type=float, default=0.1, show_default=True,
              help="A flip (verify argmax != decode argmax) fails the probe only where the decode row's "
                   "top-2 logit margin exceeds this; 0 demands agreement at every row that is not an exact tie.")
@engine_options
@thermal_flags
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Run folder (default runs/probe-margins-<utc>/).")
def margins(model, target_kind, widths, suite, positions, tolerance, backend, threads, fp8_kv, indexer_fp4,
            no_progress, out, **thermal_kw):
    """Every batched verify row against one-token decode at the same position.

    For each width, each row of one batched forward of that many suite tokens is compared with
    decoding the same tokens one at a time from the same state: max |dlogit|, bitwise equality,
    argmax agreement and the decode row's top-2 margin. Passes iff the argmax agrees wherever
    that margin exceeds --tolerance. Writes rows.csv, histogram.png and report.json; exits 1 on fail.
    """
    from ds4kit.cli.job_exit import finish_command
    from ds4kit.probes import margins as job

    config = job.MarginsConfig(widths=job.parse_widths(widths), suite=suite, positions=positions,
                               tolerance=tolerance, progress=not no_progress, out=out, command=list(sys.argv),
                               thermal=pop_thermal(thermal_kw))
    config.check()  # before the target is built: a bad flag costs nothing
    target = build_target_from_flags(model, backend, threads, fp8_kv, indexer_fp4, target=target_kind)
    report = finish_command(job.run(config, target, say=lambda m: click.echo(m, err=True)))
    click.echo(f"verdict: {report['results']['verdict']}")
    if report["results"]["verdict"] == "fail":
        sys.exit(EXIT_FAIL)
