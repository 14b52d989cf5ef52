"""`ds4kit probe identity`: flags -> IdentityConfig and a target -> ds4kit.probes.identity.job.run."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ds4kit.cli.engine_flags import build_target_from_flags, engine_options, model_option, target_option
from ds4kit.cli.thermal_flags import pop_thermal, thermal_flags


def _acceptances(text: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(v) / (100.0 if float(v) > 1 else 1.0) for v in text.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma list of acceptance rates", param_hint="--acceptance")
    if not vals or any(not 0 <= v <= 1 for v in vals):
        raise click.BadParameter("rates must be in [0, 1] (or percentages 0..100)", param_hint="--acceptance")
    return vals


@click.command("identity")
@model_option()
@target_option()
@click.option("--drafter", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="DSpark drafter GGUF for the dspark arms.")
@click.option("--suite", default="quick", show_default=True,
              help="Suite name in probes/identity (quick, default) or a suite .json file.")
@click.option("--arms", default="all", show_default=True,
              help="Comma list: target-only, dspark-auto, dspark-w2..w8, scripted-aP[-wN], or all, dspark, scripted.")
@click.option("--acceptance", "acceptance", default="0,0.2,0.4,0.6,0.8,1", show_default=True,
              help="Acceptance rates of the `scripted` group's arms.")
@click.option("--max-tokens", type=int, default=None, help="Tokens per item (default: each item's own).")
@click.option("--max-ctx", type=int, default=8192, show_default=True, help="Context size of every session.")
@engine_options
@thermal_flags
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Run folder (default runs/probe-identity-<utc>/).")
def identity(model, target_kind, drafter, suite, arms, acceptance, max_tokens, max_ctx, backend, threads, fp8_kv, indexer_fp4, out,
             **thermal_kw):
    """DSpark speculative decoding versus target-only, token for token (greedy).

    With --target llama.cpp the scripted arms' candidates are verified by llama.cpp in batches
    (a greedy loop over its sessions), which is where batched scoring differs from one-token decode.

    Every arm must produce exactly the target-only token ids on every item; at a divergence the
    report gives the index, both arms' top-k log-probabilities, the margin there and the verify
    step, width and row that produced it. Exit status 1 when any arm diverges.
    """
    from ds4kit.cli.job_exit import finish_command
    from ds4kit.probes.identity.job import IdentityConfig, run

    config = IdentityConfig(suite=suite, arms=arms, acceptances=_acceptances(acceptance), max_tokens=max_tokens,
                            max_ctx=max_ctx, out=out, command=list(sys.argv), thermal=pop_thermal(thermal_kw))
    config.check()
    from ds4kit.probes.identity.arms import select_arms

    select_arms(arms, have_drafter=drafter is not None, acceptances=config.acceptances)  # bad --arms: usage error
    if target_kind != "embedded" and drafter is not None:
        raise click.BadParameter(f"the DSpark drafter runs on the embedded engine, not on {target_kind} (its "
                                 "identity arms use the scripted drafter)", param_hint="--drafter")
    target = build_target_from_flags(model, backend, threads, fp8_kv, indexer_fp4, target=target_kind,
                                     drafter=drafter)
    report = finish_command(run(config, target))
    r = report["results"]
    for a in r["arms"]:
        sp = a["speculation"] or {}
        acc = sp.get("acceptance_rate")
        click.echo(f"{a['name']:>18}: {'identical' if a['identical'] else 'DIVERGED '}  "
                   f"{(a['tok_s'] or 0):7.2f} tok/s  {(a['speedup'] or 0):5.2f}x"
                   + (f"  acceptance {acc:.1%}" if acc is not None else ""))
    click.echo(f"verdict: {r['verdict']}")
    if r["verdict"] != "identical":
        sys.exit(1)
