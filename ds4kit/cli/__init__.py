"""The `ds4kit` command line: one subcommand per job.

Each subcommand lives in its own module and is registered here; a module parses
flags, builds a config, runs the job and writes a report (see ds4kit.reports).
"""
from __future__ import annotations

import click

from ds4kit import __version__


class _Ds4Group(click.Group):
    """Turns expected failures (bad file, bad argument, bad card) into one clear line and exit
    status 2 instead of a traceback. The run's report.json has already recorded the error.
    An interrupt exits 128 + the signal (130 for SIGINT, 143 for SIGTERM). DS4KIT_DEBUG=1 shows
    the traceback."""

    def invoke(self, ctx: click.Context):
        import os

        from ds4kit.errors import ConfigError

        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except ConfigError as exc:
            # A bad option value, found before anything loaded: a usage error naming the flag.
            if exc.option:
                raise click.BadParameter(exc.message, param_hint=exc.option) from None
            raise click.UsageError(exc.message) from None
        except KeyboardInterrupt as exc:
            # A stop signal outside a job (or a second one inside): 128 + the signal, like a shell.
            click.echo(f"ds4kit: {exc or 'interrupted'}", err=True)
            ctx.exit(getattr(exc, "exit_code", 130))
        except (ValueError, FileNotFoundError, FileExistsError, PermissionError, RuntimeError,
                NotImplementedError) as exc:
            if os.environ.get("DS4KIT_DEBUG") == "1":
                raise
            click.echo(f"ds4kit: error: {exc}", err=True)
            ctx.exit(2)


@click.group(cls=_Ds4Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ds4kit")
def main() -> None:
    """Evaluate and diagnose DeepSeek V4 Flash on your own hardware."""


def _register() -> None:
    # Imported here so a broken optional module names itself instead of killing the CLI.
    from ds4kit.cli import report_cmds

    main.add_command(report_cmds.report)
    for name, attr in (
        ("ds4kit.cli.model_cmds", "model"),
        ("ds4kit.cli.thermal_cmds", "thermal"),
        ("ds4kit.cli.bench_cmds", "bench"),
        ("ds4kit.cli.generate_cmd", "generate_cmd"),
        ("ds4kit.cli.probe_cmds", "probe"),
        ("ds4kit.cli.eval_cmds", "eval_group"),
    ):
        try:
            module = __import__(name, fromlist=[attr])
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        main.add_command(getattr(module, attr))


_register()
