"""`ds4kit bench ...`: performance measurements, each writing a report."""
from __future__ import annotations

import sys

import click


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
@click.argument("model", required=False, type=click.Path(dir_okay=False))
@click.option("-p", "--n-prompt", "pp", default="64,256", show_default=True,
              help="Prompt sizes (comma list): one `pp N` test each; empty for none.")
@click.option("-n", "--n-gen", "tg", default="32", show_default=True,
              help="Generation sizes (comma list): one `tg N` test each; empty for none.")
@click.option("-r", "--repetitions", "reps", type=click.IntRange(min=1), default=3, show_default=True,
              help="Repetitions of each test (mean and stddev).")
@click.option("-t", "--threads", type=click.IntRange(min=1), default=None,
              help="Threads for both engines and the matmul probe (default: the CPUs this process may use).")
@click.option("--delay", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Seconds to pause before each test (cooling).")
@click.option("--engines", default="ds4kit,llama.cpp", show_default=True, help="Engines to run, comma list.")
@click.option("--prefill", "prefill_mode", type=click.Choice(["batched", "exact"]), default="batched",
              show_default=True, help="ds4kit prefill mode.")
@click.option("--n-batch", type=click.IntRange(min=1), default=512, show_default=True,
              help="llama.cpp n_batch (= n_ubatch): prompt tokens per llama_decode call.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fixed pseudo-random tokens.")
@click.option("-o", "--output", "fmt", type=click.Choice(["md", "csv", "json"]), default="md", show_default=True,
              help="What to print on stdout (all three are written to the run folder either way).")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Run folder (default runs/bench-engine-<utc>).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--probe-mb", type=click.FloatRange(min=1), default=None, hidden=True,
              help="Bandwidth probe array size in MiB (default 4x the last-level cache; tests use less).")
def engine(model: str | None, pp: str, tg: str, reps: int, threads: int | None, delay: float, engines: str,
           prefill_mode: str, n_batch: int, seed: int, fmt: str, out: str | None, no_progress: bool,
           probe_mb: float | None) -> None:
    """Prefill and decode tok/s of the ds4kit engine vs llama.cpp on the same GGUF (llama-bench style).

    Without MODEL, the `medium` synthetic model is written once into the cache and used.
    """
    import json

    from ds4kit.bench.engine_bench import parse_engines, parse_sizes, run_engine_bench

    try:
        pp_sizes = parse_sizes(pp, "-p")
        tg_sizes = parse_sizes(tg, "-n")
        engine_list = parse_engines(engines)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    folder = run_engine_bench(model, pp=pp_sizes, tg=tg_sizes, reps=reps, threads=threads, delay_s=delay,
                              engines=engine_list, prefill_mode=prefill_mode, n_batch=n_batch, seed=seed,
                              out=out, probe_mb=probe_mb, command=sys.argv, progress=not no_progress,
                              say=lambda m: click.echo(m, err=True))
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    if fmt == "json":
        click.echo(json.dumps(report["results"], indent=2))
    elif fmt == "csv":
        click.echo((folder / "results.csv").read_text(encoding="utf-8"), nl=False)
    else:
        click.echo((folder / "summary.md").read_text(encoding="utf-8"), nl=False)
    click.echo(f"report: {folder / 'report.json'}", err=True)
