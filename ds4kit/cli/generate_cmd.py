"""`ds4kit generate`: one generation on the embedded engine, streamed, with a report."""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import click

from ds4kit.reports import start_run

# Sampling flags; None means "take the model card's value" (then the built-in default).
_SAMPLING_FLAGS = {
    "temperature": ("temperature", 0.0),
    "top_k": ("top_k", 0),
    "top_p": ("top_p", 1.0),
    "min_p": ("min_p", 0.0),
    "repetition_penalty": ("repetition_penalty", 1.0),
    "presence_penalty": ("presence_penalty", 0.0),
}


def _prompt_messages(prompt: str | None, prompt_file: Path | None, messages_file: Path | None,
                     system: str | None) -> tuple[list[dict[str, Any]] | None, str | None]:
    given = [x is not None for x in (prompt, prompt_file, messages_file)]
    if sum(given) != 1:
        raise click.UsageError("give exactly one of --prompt, --prompt-file or --messages")
    if messages_file is not None:
        try:
            msgs = json.loads(messages_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"{messages_file}: not valid JSON ({exc})", param_hint="--messages")
        if isinstance(msgs, dict) and "messages" in msgs:
            msgs = msgs["messages"]
        if not isinstance(msgs, list):
            raise click.BadParameter(f"{messages_file}: expected a JSON list of messages", param_hint="--messages")
        return msgs, None
    text = prompt if prompt is not None else prompt_file.read_text(encoding="utf-8")
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
    return msgs, text


def _sampling(card: dict[str, Any], flags: dict[str, Any], greedy: bool) -> tuple[dict[str, Any], dict[str, str]]:
    values, source = {}, {}
    card_sampling = card.get("sampling") or {}
    for name, (card_key, default) in _SAMPLING_FLAGS.items():
        if flags.get(name) is not None:
            values[name], source[name] = flags[name], "flag"
        elif card_key in card_sampling:
            values[name], source[name] = card_sampling[card_key], "card"
        else:
            values[name], source[name] = default, "default"
    if greedy:
        values["temperature"], source["temperature"] = 0.0, "--greedy"
    return values, source


@click.command("generate")
@click.option("--model", "-m", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="deepseek4 GGUF (default: the built-in synthetic demo model).")
@click.option("--prompt", "-p", default=None, help="User message (chat template applied unless --raw).")
@click.option("--prompt-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
@click.option("--messages", "messages_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="JSON list of chat messages (OpenAI style).")
@click.option("--system", default=None, help="System message placed before --prompt.")
@click.option("--raw", is_flag=True, help="Tokenize the prompt as is: no chat template, no BOS.")
@click.option("--thinking/--no-thinking", default=None, help="Thinking mode (default: on when --effort is given).")
@click.option("--effort", type=click.Choice(["low", "medium", "high", "x-high", "max"]), default=None,
              help="Reasoning effort; its thinking budget comes from the model card.")
@click.option("--max-tokens", type=click.IntRange(min=0), default=256, show_default=True)
@click.option("--max-ctx", type=click.IntRange(min=1), default=4096, show_default=True)
@click.option("--temperature", type=float, default=None)
@click.option("--top-k", type=int, default=None)
@click.option("--top-p", type=float, default=None)
@click.option("--min-p", type=float, default=None)
@click.option("--repeat-penalty", "repetition_penalty", type=float, default=None)
@click.option("--presence-penalty", type=float, default=None)
@click.option("--frequency-penalty", type=float, default=0.0, show_default=True)
@click.option("--greedy", is_flag=True, help="Temperature 0 (argmax), whatever the card says.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--stop", "stops", multiple=True, help="Stop string (repeatable).")
@click.option("--logprobs", type=click.IntRange(min=0), default=0, help="Record the top-K log-probabilities per position.")
@click.option("--threads", type=click.IntRange(min=0), default=0, help="CPU threads (0: all).")
@click.option("--prefill", "prefill_mode", type=click.Choice(["exact", "batched"]), default="exact", show_default=True)
@click.option("--card", "card_path", type=click.Path(path_type=Path), default=None, help="Model card JSON to use.")
@click.option("--quiet", "-q", is_flag=True, help="Do not stream the output.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Run folder.")
def generate_cmd(model, prompt, prompt_file, messages_file, system, raw, thinking, effort, max_tokens, max_ctx,
                 temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty,
                 greedy, seed, stops, logprobs, threads, prefill_mode, card_path, quiet, out):
    """Generate text with the embedded engine; streams tokens and writes a `generate` report."""
    from ds4kit.cards import resolve_card
    from ds4kit.cards.budget import derive_thinking_budget
    from ds4kit.chat import render_chat
    from ds4kit.chat.markers import EOS, THINK_CLOSE
    from ds4kit.engine.generate import GenerationConfig, generate
    from ds4kit.engine import Model

    messages, plain = _prompt_messages(prompt, prompt_file, messages_file, system)
    if raw and plain is None:
        raise click.UsageError("--raw needs --prompt or --prompt-file (messages always use the chat template)")
    thinking = bool(effort) if thinking is None else thinking
    if effort and not thinking:
        raise click.UsageError("--effort needs thinking mode (drop --no-thinking)")
    if raw and thinking:
        raise click.UsageError("--raw and --thinking do not mix: thinking is part of the chat template")

    demo = model is None
    if demo:
        from ds4kit.synth import demo_model_path

        model = demo_model_path()
        click.echo(f"(no --model: running the built-in synthetic demo model {model}; its weights are random, "
                   "so its text is meaningless)", err=True)

    with start_run("generate", out) as run:
        if demo:
            run.warn("demo-model", "ran on the built-in synthetic demo model (random weights): the text is meaningless")
        rt = Model.load(model, threads=threads or None)
        run.set_model(rt.file.manifest_entry())
        card = resolve_card(rt.path, rt.file.name, rt.file.architecture, card_path=card_path, announce=False)
        run.set_card(card.to_manifest())
        budget = derive_thinking_budget(card.card, max_tokens=max_tokens, reasoning_effort=effort if thinking else None,
                                        max_ctx=max_ctx, announce=False) if thinking else None
        if budget is not None and budget.warning:
            run.warn("thinking-budget", budget.warning)
        if thinking and effort is None:
            # Thinking without an effort: the card's tiers do not apply; the whole budget may think.
            budget_tokens = max(0, max_tokens - int(card.card.get("hard_limit_reply_budget", 0)))
        else:
            budget_tokens = budget.tokens if budget is not None else None

        prompt_text = plain if raw else render_chat(messages, thinking=thinking, reasoning_effort=effort)
        prompt_ids = rt.encode(prompt_text, parse_special=not raw)
        if len(prompt_ids) >= max_ctx:
            raise ValueError(f"the prompt is {len(prompt_ids)} tokens, which does not fit --max-ctx {max_ctx}")
        values, source = _sampling(card.card, dict(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                                                   repetition_penalty=repetition_penalty,
                                                   presence_penalty=presence_penalty), greedy)
        eos = rt.token_id(EOS)
        cfg = GenerationConfig(max_tokens=max_tokens, frequency_penalty=frequency_penalty, seed=seed,
                               stop_token_ids=(eos,), stop_strings=tuple(stops), logprobs=logprobs,
                               prefill_mode=prefill_mode,
                               thinking_budget=budget_tokens if thinking else None,
                               think_end_id=rt.token_id(THINK_CLOSE) if thinking else None, **values)
        session = rt.session(max_ctx=max_ctx)
        click.echo(f"model {rt.path.name}: {len(prompt_ids)} prompt tokens, sampling "
                   + ", ".join(f"{k}={v}" for k, v in values.items()) + f", seed {seed}", err=True)

        def stream(ev):
            if not quiet:
                sys.stdout.write(ev.text)
                sys.stdout.flush()

        res = generate(session, rt.tokenizer, prompt_ids, cfg, on_token=stream)
        if not quiet:
            sys.stdout.write("\n")
        _write_token_table(run, rt, res)
        if logprobs:
            with open(run.add_file("logprobs", "logprobs.jsonl"), "w", encoding="utf-8") as f:
                for row in res.logprobs:
                    f.write(json.dumps(row) + "\n")
        results = _results(res, prompt_text, values, source, seed, thinking, effort, budget, budget_tokens,
                           max_tokens, max_ctx, prefill_mode, rt.threads, logprobs)
        click.echo(f"{len(res.tokens)} tokens, stop: {res.stop_reason}; prefill {_rate(res.prefill_tok_s)}, "
                   f"decode {_rate(res.decode_tok_s)}", err=True)
        run.finish(results, summary_md=_summary(results))
        click.echo(f"report: {run.folder / 'report.json'}", err=True)


def _rate(v: float | None) -> str:
    return f"{v:.2f} tok/s" if v else "n/a"


def _write_token_table(run, rt, res) -> None:
    path = run.add_file("tokens", "tokens.csv")
    by_index = {row["index"]: row for row in res.logprobs}
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["index", "token", "piece", "elapsed_s", "logprob", "top2_margin"])
        for i, (tok, dt) in enumerate(zip(res.tokens, res.token_times_s)):
            row = by_index.get(i, {})
            w.writerow([i, tok, rt.decode([tok]), f"{dt:.6f}", row.get("logprob", ""), row.get("top2_margin", "")])


def _results(res, prompt_text, values, source, seed, thinking, effort, budget, budget_tokens, max_tokens, max_ctx,
             prefill_mode, threads, logprobs) -> dict[str, Any]:
    import numpy as np

    times = np.array(res.token_times_s) if res.token_times_s else np.zeros(0)
    margins = [r["top2_margin"] for r in res.logprobs if r.get("top2_margin") is not None]
    return {
        "prompt": {"text": prompt_text, "n_tokens": len(res.prompt_ids), "ids": res.prompt_ids},
        "output": {"text": res.text, "n_tokens": len(res.tokens), "ids": res.tokens},
        "stop": {"reason": res.stop_reason, "detail": res.stop_detail},
        "sampling": {**values, "seed": seed, "source": source},
        "thinking": {"enabled": thinking, "effort": effort, "budget_tokens": budget_tokens,
                     "reply_budget": budget.reply_budget if budget else None,
                     "clamped_by": budget.clamped_by if budget else None,
                     "budget_hit_at": res.thinking_budget_hit_at},
        "limits": {"max_tokens": max_tokens, "max_ctx": max_ctx},
        "timings": {
            "prefill_mode": prefill_mode, "threads": threads,
            "prefill_s": res.prefill_s, "prefill_tok_s": res.prefill_tok_s,
            "decode_s": res.decode_s, "decode_tok_s": res.decode_tok_s,
            "token_s_p50": float(np.percentile(times, 50)) if times.size else None,
            "token_s_p90": float(np.percentile(times, 90)) if times.size else None,
            "token_s_max": float(times.max()) if times.size else None,
        },
        "logprobs": {"k": logprobs, "positions": len(res.logprobs),
                     "min_top2_margin": min(margins) if margins else None},
    }


def _summary(r: dict[str, Any]) -> str:
    t = r["timings"]
    return (f"## Output ({r['output']['n_tokens']} tokens, stop: {r['stop']['reason']})\n\n```\n{r['output']['text']}\n```\n\n"
            f"- prompt tokens: {r['prompt']['n_tokens']}\n- prefill: {_rate(t['prefill_tok_s'])} ({t['prefill_mode']})\n"
            f"- decode: {_rate(t['decode_tok_s'])}\n- sampling: " +
            ", ".join(f"{k}={v}" for k, v in r["sampling"].items() if k != "source") + "\n")


commands = [generate_cmd]
