"""`ds4kit model ...`: the group; each subcommand lives in its own module."""
from __future__ import annotations

import importlib

import click


@click.group()
def model() -> None:
    """Make, inspect, hash and tokenize models."""


# Each module defines `commands`: a list of click commands to add to the group.
_SUBCOMMAND_MODULES = (
    "ds4kit.cli.model_synth_cmd",
    "ds4kit.cli.model_info_cmd",
)

for _name in _SUBCOMMAND_MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as _exc:
        if _exc.name != _name:
            raise
        continue
    for _cmd in _mod.commands:
        model.add_command(_cmd)
