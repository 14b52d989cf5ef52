"""`ds4kit generate`: flags -> GenerateConfig and a target -> ds4kit.jobs.generate.run -> print."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ds4kit.cli.engine_flags import build_target_from_flags, drafter_options, engine_options, model_option
from ds4kit.cli.thermal_flags import pop_thermal, thermal_flags

_CARD = " (default: the model card's value)"


@click.command("generate")
@model_option()
@click.option("--prompt", "-p", default=None, help="User message (chat template applied unless --raw).")
@click.option("--prompt-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Read the user message from this UTF-8 file.")
@click.option("--messages", "messages_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="JSON list of chat messages (OpenAI style).")
@click.option("--system", default=None, help="System message placed before --prompt.")
@click.option("--raw", is_flag=True, help="Tokenize the prompt as is: no chat template, no BOS.")
@click.option("--thinking/--no-thinking", default=None, help="Thinking mode (default: on when --effort is given).")
@click.option("--effort", type=click.Choice(["low", "medium", "high", "x-high", "max"]), default=None,
              help="Reasoning effort; its thinking budget comes from the model card.")
@click.option("--max-tokens", type=int, default=256, show_default=True, help="Most tokens to generate (>= 1).")
@click.option("--max-ctx", type=int, default=4096, show_default=True,
              help="Context size: prompt plus generated tokens (>= 2).")
@click.option("--temperature", type=float, default=None, help="Softmax temperature, >= 0; 0 is greedy" + _CARD + ".")
@click.option("--top-k", type=int, default=None, help="Keep the K most likely tokens, >= 0; 0 keeps all" + _CARD + ".")
@click.option("--top-p", type=float, default=None,
              help="Keep the smallest set of tokens whose probability reaches P, in (0, 1]; 1 keeps all" + _CARD + ".")
@click.option("--min-p", type=float, default=None,
              help="Drop tokens below P times the top probability, in [0, 1]; 0 keeps all" + _CARD + ".")
@click.option("--repeat-penalty", "repetition_penalty", type=float, default=None,
              help="Divide the logits of tokens already seen by this, > 0; 1 is none" + _CARD + ".")
@click.option("--presence-penalty", type=float, default=None,
              help="Subtract this from the logits of tokens already seen; 0 is none" + _CARD + ".")
@click.option("--frequency-penalty", type=float, default=0.0, show_default=True,
              help="Subtract this times the count of each token already seen; 0 is none.")
@click.option("--greedy", is_flag=True, help="Temperature 0 (argmax), whatever the card says.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the sampler's xoshiro256** generator, in [0, 2**64): a seed reproduces a run.")
@click.option("--stop", "stops", multiple=True, help="Stop string (repeatable).")
@click.option("--logprobs", type=int, default=0, help="Record the top-K log-probabilities per position (K >= 0).")
@engine_options
@drafter_options
@thermal_flags
@click.option("--prefill", "prefill_mode", type=click.Choice(["exact", "batched"]), default="exact", show_default=True,
              help="Prefill mode: exact (as decoding one by one) or batched.")
@click.option("--card", "card_path", type=click.Path(path_type=Path), default=None, help="Model card JSON to use.")
@click.option("--cache", is_flag=True,
              help="Prefix cache across the turns of a --messages conversation (each reply the file does not "
                   "give is generated; a turn restores the longest cached prefix and prefills the rest).")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="Also keep the cache on disk in this folder (implies --cache; later runs reuse it).")
@click.option("--cache-mb", type=int, default=2048, show_default=True, help="Memory budget of the prefix cache.")
@click.option("--cache-disk-mb", type=int, default=20480, show_default=True, help="Size cap of --cache-dir.")
@click.option("--quiet", "-q", is_flag=True, help="Do not stream the output.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Run folder (default runs/generate-<utc>/).")
def generate_cmd(model, prompt, prompt_file, messages_file, system, raw, thinking, effort, max_tokens, max_ctx,
                 temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty,
                 greedy, seed, stops, logprobs, backend, threads, fp8_kv, indexer_fp4, drafter, spec_width, prefill_mode,
                 card_path,
                 cache, cache_dir, cache_mb, cache_disk_mb, quiet, out, **thermal_kw):
    """Generate text with the embedded engine; streams tokens and writes a `generate` report.

    Ctrl-C or SIGTERM stops after the current token: the report, tokens.csv and logprobs.jsonl
    keep what was generated (status "interrupted", exit 130 or 143).
    """
    from ds4kit.cli.job_exit import finish_command
    from ds4kit.jobs import generate

    config = generate.GenerateConfig(
        prompt=prompt, prompt_file=prompt_file, messages_file=messages_file, system=system, raw=raw,
        thinking=thinking, effort=effort, max_tokens=max_tokens, max_ctx=max_ctx, temperature=temperature,
        top_k=top_k, top_p=top_p, min_p=min_p, repetition_penalty=repetition_penalty,
        presence_penalty=presence_penalty, frequency_penalty=frequency_penalty, greedy=greedy, seed=seed,
        stops=tuple(stops), logprobs=logprobs, prefill_mode=prefill_mode, card_path=card_path, cache=cache,
        cache_dir=cache_dir, cache_mb=cache_mb, cache_disk_mb=cache_disk_mb, out=out,
        command=list(sys.argv), thermal=pop_thermal(thermal_kw))
    config.check()  # before the target is built: a bad flag costs nothing
    target = build_target_from_flags(model, backend, threads, fp8_kv, indexer_fp4, drafter=drafter,
                                     spec_width=spec_width)

    streaming = [False]  # text streamed since the last line end

    def stream(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()
        streaming[0] = streaming[0] or bool(text)

    def end_stream() -> None:
        if streaming[0]:
            sys.stdout.write("\n")
            sys.stdout.flush()
            streaming[0] = False

    def say(message: str) -> None:
        end_stream()  # a status line never lands in the middle of the streamed text
        click.echo(message, err=True)

    try:
        path = generate.run(config, target, on_text=None if quiet else stream, say=say)
    finally:
        end_stream()
    finish_command(path)


commands = [generate_cmd]
