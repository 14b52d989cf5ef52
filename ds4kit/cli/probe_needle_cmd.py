"""`ds4kit probe needle`: flags -> NeedleConfig and a target -> the needle job -> print."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ds4kit.cli.engine_flags import build_target_from_flags, engine_options, model_option
from ds4kit.cli.thermal_flags import pop_thermal, thermal_flags


@click.command("needle")
@model_option()
@click.option("--lengths", default="2k,4k,8k,16k", show_default=True,
              help="Context lengths in tokens (a k suffix is 1024).")
@click.option("--depths", default="0,10,20,30,40,50,60,70,80,90,100", show_default=True,
              help="Needle depths, percent of the haystack's tokens.")
@click.option("--suite", default="default", show_default=True,
              help="A needle suite from probes/needle (text, needle, question, answer) or a suite file.")
@click.option("--arms", default="cold,restored", show_default=True,
              help="cold (the whole prompt prefilled), restored (the haystack restored from the prefix cache, "
                   "only the question prefilled).")
@click.option("--max-tokens", type=int, default=16, show_default=True, help="Most tokens per answer.")
@engine_options
@thermal_flags
@click.option("--prefill", "prefill_mode", type=click.Choice(["exact", "batched"]), default="batched",
              show_default=True, help="Prefill mode.")
@click.option("--resume", is_flag=True, help="Continue the run in --out: only the cells not yet finished run.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Run folder (default runs/probe-needle-<utc>/).")
def needle(model, lengths, depths, suite, arms, max_tokens, backend, threads, fp8_kv, indexer_fp4, prefill_mode,
           resume, quiet, out, **thermal_kw):
    """A needle at token-exact depths of long contexts, scored as an exact literal, cold and restored.

    One line per finished cell in cells.jsonl (a kill loses no finished cell; --resume continues),
    a heatmap (needle.png), prefill and decode speed per cell, and whether the arms agree.
    """
    from ds4kit.cli.job_exit import finish_command
    from ds4kit.probes.needle import NeedleConfig, run
    from ds4kit.probes.needle.job import parse_depths, parse_lengths

    config = NeedleConfig(lengths=parse_lengths(lengths), depths=parse_depths(depths), suite=suite,
                          arms=tuple(a.strip() for a in arms.split(",") if a.strip()), max_tokens=max_tokens,
                          prefill_mode=prefill_mode, resume=resume, out=out, command=list(sys.argv),
        thermal=pop_thermal(thermal_kw))
    config.check()
    target = build_target_from_flags(model, backend, threads, fp8_kv, indexer_fp4)
    finish_command(run(config, target, say=lambda m: click.echo(m, err=True), progress=not quiet))
