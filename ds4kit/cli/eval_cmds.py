"""`ds4kit eval ...`: task evaluations. Each eval's command lives in its own module
(eval_<name>_cmd.py), registered on this group in `_register`; the work is done by its job in
ds4kit.evals.<name>."""
from __future__ import annotations

import click


@click.group("eval")
def eval_group() -> None:
    """Evaluate the model on tasks (HumanEval+ through evalplus)."""


def _register() -> None:
    for name, attr in (
        ("ds4kit.cli.eval_humaneval_cmd", "humaneval"),
    ):
        module = __import__(name, fromlist=[attr])
        eval_group.add_command(getattr(module, attr))


_register()
