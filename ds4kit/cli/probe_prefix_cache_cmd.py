"""`ds4kit probe prefix-cache`: flags -> PrefixCacheProbeConfig and a target -> the probe's job ->
its verdict as the exit status (1 on a fail)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ds4kit.cli.engine_flags import build_target_from_flags, engine_options, model_option
from ds4kit.cli.thermal_flags import pop_thermal, thermal_flags


def _arms(ctx, param, value: str) -> tuple[str, ...]:
    return tuple(a.strip() for a in value.split(",") if a.strip())


@click.command("prefix-cache")
@model_option()
@click.option("--suite", default=None,
              help="A suite from probes/prefix-cache (seed-7k, long-system, branches, edited-turn) or a suite file.")
@click.option("--conversation", type=click.Path(path_type=Path), default=None,
              help="Or a JSON list of chat messages (as generate --messages takes).")
@click.option("--arms", default="on,off", show_default=True, callback=_arms,
              help="Which arms run: on (one prefix cache for the whole suite), off (every turn prefilled cold).")
@click.option("--max-tokens", type=int, default=None, help="Tokens per reply (default: the suite's, else 8).")
@click.option("--max-ctx", type=int, default=8192, show_default=True, help="Context size of every session.")
@click.option("--thinking/--no-thinking", default=None,
              help="Thinking mode: half of each reply thinks, then </think> is forced (default: the suite's).")
@engine_options
@thermal_flags
@click.option("--prefill", "prefill_mode", type=click.Choice(["exact", "batched"]), default="batched",
              show_default=True, help="Prefill mode of both arms.")
@click.option("--cache-mb", type=int, default=8192, show_default=True,
              help="Memory budget of the cache (an eviction makes a turn miss what it should reuse).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Run folder (default runs/probe-prefix-cache-<utc>/).")
def prefix_cache(model, suite, conversation, arms, max_tokens, max_ctx, thinking, backend, threads, fp8_kv,
                 indexer_fp4, prefill_mode, cache_mb, quiet, out, **thermal_kw):
    """Check that the prefix cache reuses what an ideal cache would and changes no answer.

    Each conversation runs with the cache off (cold) and on; per turn the expected (ideal) reuse,
    the actual reuse, the prefill times and whether the answer is token for token the cold one.
    Exit status 0 on a pass, 1 on a fail (report.json says why), 2 on a bad argument.
    """
    from ds4kit.cli.job_exit import finish_command
    from ds4kit.probes.prefix_cache import PrefixCacheProbeConfig, run

    config = PrefixCacheProbeConfig(suite=suite, conversation=conversation, arms=arms, max_tokens=max_tokens,
                                    max_ctx=max_ctx, thinking=thinking, prefill_mode=prefill_mode,
                                    cache_mb=cache_mb, out=out, command=list(sys.argv),
        thermal=pop_thermal(thermal_kw))
    config.check()
    target = build_target_from_flags(model, backend, threads, fp8_kv, indexer_fp4)
    path = run(config, target, say=lambda m: click.echo(m, err=True), progress=not quiet)
    report = finish_command(path)
    if report["results"]["verdict"] == "fail":
        sys.exit(1)
