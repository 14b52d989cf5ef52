"""`ds4kit bench ...`: performance measurements, each writing a report."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ds4kit.cli.engine_flags import build_target_from_flags, drafter_options, engine_options, model_option
from ds4kit.cli.thermal_flags import pop_thermal, thermal_flags


@click.group()
def bench() -> None:
    """Measure speed against reference implementations."""


@bench.command("tokenizer")
@click.option("--size-mb", type=click.FloatRange(min=0, min_open=True), default=2.0, show_default=True,
              help="Corpus size in MB (UTF-8).")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Run folder (default runs/bench-tokenizer-<utc>).")
@click.option("--seed", type=int, default=0, show_default=True, help="Corpus seed.")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Timed passes per side; the best counts.")
def tokenizer(size_mb: float, out: str | None, seed: int, repeat: int) -> None:
    """Encode throughput of the C++ tokenizer vs HF tokenizers, single-threaded."""
    from ds4kit.bench.tokenizer_bench import run_tokenizer_bench

    folder = run_tokenizer_bench(size_mb, out, seed=seed, repeat=repeat, command=sys.argv)
    import json

    r = json.loads((folder / "report.json").read_text(encoding="utf-8"))["results"]
    click.echo(f"ours {r['ours']['mb_per_s']:.2f} MB/s, HF {r['hf']['mb_per_s']:.2f} MB/s, ratio {r['ratio']:.2f}x, "
               f"ids identical: {r['ids_identical']}")
    click.echo(f"report: {folder / 'report.json'}")


@bench.command("engine")
@click.argument("model_arg", metavar="[MODEL]", required=False, type=click.Path(path_type=Path))
@model_option("deepseek4 GGUF, instead of MODEL (default: the medium synthetic model, written once).")
@click.option("-p", "--n-prompt", "pp", default="64,256", show_default=True,
              help="Prompt sizes (comma list): one `pp N` test each; empty for none.")
@click.option("-n", "--n-gen", "tg", default="32", show_default=True,
              help="Generation sizes (comma list): one `tg N` test each; empty for none.")
@click.option("-d", "--depth", "depths", default="0", show_default=True,
              help="Context depths (comma list, llama-bench's -d): every test runs after that many context "
                   "tokens; ds4kit prefills each depth once and restores a snapshot per repetition.")
@click.option("-r", "--repetitions", "reps", type=int, default=3, show_default=True,
              help="Repetitions of each test (mean and stddev).")
@engine_options
@drafter_options
@click.option("--delay", type=float, default=0.0, show_default=True,
              help="Seconds to pause before each test (cooling).")
@click.option("--engines", default="ds4kit,llama.cpp", show_default=True, help="Engines to run, comma list.")
@click.option("--prefill", "prefill_mode", type=click.Choice(["batched", "exact"]), default="batched",
              show_default=True, help="ds4kit prefill mode.")
@click.option("--n-batch", type=int, default=512, show_default=True,
              help="llama.cpp n_batch (= n_ubatch): prompt tokens per llama_decode call.")
@click.option("--n-gpu-layers", "llama_gpu_layers", type=click.IntRange(min=0), default=None,
              help="llama.cpp layers on the GPU (default: all with --backend cuda/hip, none otherwise; needs a "
                   "GPU build of llama.cpp, e.g. LLAMA_CPP_LIB_PATH, see docs/gpu-backend.md).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fixed pseudo-random tokens.")
@click.option("-o", "--output", "fmt", type=click.Choice(["md", "csv", "json"]), default="md", show_default=True,
              help="What to print on stdout (all three are written to the run folder either way).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default runs/bench-engine-<utc>).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@thermal_flags
@click.option("--probe-mb", type=click.FloatRange(min=1), default=None, hidden=True,
              help="Bandwidth probe array size in MiB (default 4x the last-level cache; tests use less).")
def engine(model_arg: Path | None, model: Path | None, pp: str, tg: str, depths: str, reps: int, backend: str,
           threads: int | None, fp8_kv: bool, indexer_fp4: bool, drafter: Path | None, spec_width: int, delay: float,
           engines: str, prefill_mode: str, n_batch: int, llama_gpu_layers: int | None, seed: int, fmt: str,
           out: Path | None, no_progress: bool,
           probe_mb: float | None, **thermal_kw) -> None:
    """Prefill and decode tok/s of the ds4kit engine vs llama.cpp on the same GGUF (llama-bench style).

    Without MODEL, the `medium` synthetic model is written once into the cache and used.
    --backend, --fp8-kv and --indexer-fp4 apply to ds4kit; llama.cpp has neither D rounding, so
    --no-fp8-kv --no-indexer-fp4 is the like-for-like comparison. --drafter adds, for each -n
    size, greedy generation with DSpark off and on (ds4kit only: genN, genN+dspark). Ctrl-C keeps
    the finished repetitions (exit 130; SIGTERM 143).
    """
    import json

    from ds4kit.bench.engine_bench import parse_depths, parse_engines, parse_sizes
    from ds4kit.cli.job_exit import finish_command
    from ds4kit.jobs.bench_engine import BenchEngineConfig, run

    if model_arg is not None and model is not None:
        raise click.UsageError("give the model once: MODEL or --model")
    config = BenchEngineConfig(pp=tuple(_parsed(parse_sizes, pp, "-p")), tg=tuple(_parsed(parse_sizes, tg, "-n")),
                               depths=tuple(_parsed(parse_depths, depths)), reps=reps, delay_s=delay, engines=tuple(_parsed(parse_engines, engines)),
                               prefill_mode=prefill_mode, n_batch=n_batch, llama_gpu_layers=llama_gpu_layers,
                               seed=seed, probe_mb=probe_mb,
                               progress=not no_progress, out=out, command=list(sys.argv),
                               thermal=pop_thermal(thermal_kw))
    config.check()
    target = build_target_from_flags(model_arg or model, backend, threads, fp8_kv, indexer_fp4,
                                     fallback="medium", model_flag="MODEL", drafter=drafter, spec_width=spec_width)
    path = run(config, target, say=lambda m: click.echo(m, err=True))
    folder = path.parent
    report = json.loads(path.read_text(encoding="utf-8"))
    if fmt == "json":
        click.echo(json.dumps(report["results"], indent=2))
    elif fmt == "csv":
        click.echo((folder / "results.csv").read_text(encoding="utf-8"), nl=False)
    else:
        click.echo((folder / "summary.md").read_text(encoding="utf-8"), nl=False)
    finish_command(path)


def _parsed(parse, *args):
    try:
        return parse(*args)
    except ValueError as exc:  # the message names the option already
        raise click.BadParameter(str(exc)) from None
