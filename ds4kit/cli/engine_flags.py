"""The flags of every command that runs the engine, and the target they build (one place).

    @click.command()
    @model_option()                  # -m/--model (bench engine takes MODEL as an argument instead)
    @engine_options
    def cmd(model, backend, threads, fp8_kv, indexer_fp4, ...):
        target = build_target_from_flags(model, backend, threads, fp8_kv, indexer_fp4)

Commands that can run on llama.cpp as well add `@target_option()` (`--target embedded|llama.cpp`)
and pass `target=` on.
"""
from __future__ import annotations

from pathlib import Path

import click

from ds4kit.targets.options import BACKEND_CHOICES, TARGET_CHOICES, Numerics, TargetOptions, build_target


def model_option(help_text: str = "deepseek4 GGUF (default: the built-in synthetic demo model)."):
    return click.option("--model", "-m", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                        help=help_text)


def target_option():
    return click.option("--target", "target_kind", type=click.Choice(TARGET_CHOICES), default="embedded",
                        show_default=True,
                        help="What runs the model: ds4kit's engine, or llama.cpp in process (llama-cpp-python "
                             "0.3.36; --fp8-kv/--indexer-fp4 do not apply to it, it has neither rounding).")


def engine_options(f):
    """--backend, --threads, --fp8-kv/--no-fp8-kv, --indexer-fp4/--no-indexer-fp4."""
    options = [
        click.option("--backend", type=click.Choice(BACKEND_CHOICES), default="auto", show_default=True,
                     help="Engine backend; auto picks a GPU backend when one is built and present, else cpu."),
        click.option("--threads", "-t", type=click.IntRange(min=0), default=None,
                     help="CPU threads (default or 0: every CPU this process may use)."),
        click.option("--fp8-kv/--no-fp8-kv", default=True, show_default=True,
                     help="Round stored KV rows through FP8-E4M3 as D does; --no-fp8-kv keeps them as llama.cpp does."),
        click.option("--indexer-fp4/--no-indexer-fp4", default=True, show_default=True,
                     help="Round the indexer's keys and queries to FP4 as D does; --no-indexer-fp4 as llama.cpp."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


class SpecWidth(click.ParamType):
    """`auto` (0: the width policy) or a fixed verify width 1..8."""

    name = "auto|1..8"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            n = value
        elif str(value).strip().lower() == "auto":
            return 0
        else:
            try:
                n = int(str(value))
            except ValueError:
                self.fail(f"{value!r} is not 'auto' or a width 1..8", param, ctx)
        if not 1 <= n <= 8:
            self.fail(f"{n} is outside 1..8 (or 'auto')", param, ctx)
        return n


def drafter_options(f):
    """--drafter D.gguf, --spec-width auto|N: speculative decoding with a DSpark drafter."""
    options = [
        click.option("--drafter", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                     help="DSpark drafter GGUF (deepseek4-dflash-draft): decode speculatively; greedy output is "
                          "token for token the same, sampled output has the same distribution."),
        click.option("--spec-width", type=SpecWidth(), default="auto", show_default=True,
                     help="Tokens verified per step: auto (measured costs and acceptance; off when nothing pays) "
                          "or a fixed 1..8 (capped at 1 + the drafter's block size)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def target_options(model: Path | str | None, backend: str, threads: int | None, fp8_kv: bool, indexer_fp4: bool,
                   *, fallback: str = "demo", model_flag: str = "--model", target: str = "embedded",
                   drafter: Path | str | None = None, spec_width: int = 0) -> TargetOptions:
    return TargetOptions(model=model, backend=backend, threads=threads or None,
                         numerics=Numerics(fp8_kv=fp8_kv, indexer_fp4=indexer_fp4), fallback=fallback,
                         model_flag=model_flag, target=target, drafter=drafter, spec_width=spec_width)


def build_target_from_flags(model: Path | str | None, backend: str, threads: int | None, fp8_kv: bool,
                            indexer_fp4: bool, *, fallback: str = "demo", model_flag: str = "--model",
                            target: str = "embedded", drafter: Path | str | None = None, spec_width: int = 0):
    """The unloaded target (the job loads it inside its run); says which model runs without one."""
    options = target_options(model, backend, threads, fp8_kv, indexer_fp4, fallback=fallback, model_flag=model_flag,
                             target=target, drafter=drafter, spec_width=spec_width)
    return build_target(options, say=lambda m: click.echo(m, err=True))
