"""`ds4kit probe ...`: diagnostics that qualify an engine. Each probe's command lives in its own
module (probe_<name>_cmd.py) and is registered on this group in `_register` below; the work is
done by its job in ds4kit.probes.<name>."""
from __future__ import annotations

import click


@click.group()
def probe() -> None:
    """Probe an engine for the field's known defects (identity, margins, prefix cache, needle)."""


def _register() -> None:
    for name, attr in (
        ("ds4kit.cli.probe_identity_cmd", "identity"),
        ("ds4kit.cli.probe_margins_cmd", "margins"),
        ("ds4kit.cli.probe_prefix_cache_cmd", "prefix_cache"),
        ("ds4kit.cli.probe_needle_cmd", "needle"),
    ):
        module = __import__(name, fromlist=[attr])
        probe.add_command(getattr(module, attr))


_register()
