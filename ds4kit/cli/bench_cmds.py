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
