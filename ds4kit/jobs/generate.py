"""The `generate` job: one generation on a target, streamed, with a report.

    from ds4kit.jobs import generate
    from ds4kit.targets import TargetOptions, build_target
    report = generate.run(generate.GenerateConfig(prompt="Hi", max_tokens=32), build_target(TargetOptions()),
                          on_text=lambda t: print(t, end=""))

Card resolution, thinking budget, chat template, sampling values and where each came from,
streaming, tokens.csv, logprobs.jsonl and the report all happen here; `ds4kit generate` only
parses flags into a GenerateConfig and prints.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ds4kit.engine.generate import GenerationConfig, GenerationResult, sampling_problem
from ds4kit.errors import ConfigError
from ds4kit.interrupts import StopSignals
from ds4kit.jobs.common import load_target, say_stderr, stop_signals
from ds4kit.jobs.telemetry import RunTelemetry, ThermalOptions
from ds4kit.jobs.generate_output import (rate, results_dict, summary_md, write_logprobs, write_spec_decisions,
                                         write_token_table)
from ds4kit.jobs.generate_prompt import load_prompt
from ds4kit.jobs.generate_turns import cache_problem, run_turns, turns_summary, write_turns
from ds4kit.engine.conversation import turns_to_generate
from ds4kit.reports import start_run
from ds4kit.reports.run import check_run_folder

# Sampling value -> (its flag, the model card's key, the built-in default when the card has none).
SAMPLING_FROM_CARD = {
    "temperature": ("--temperature", "temperature", 0.0),
    "top_k": ("--top-k", "top_k", 0),
    "top_p": ("--top-p", "top_p", 1.0),
    "min_p": ("--min-p", "min_p", 0.0),
    "repetition_penalty": ("--repeat-penalty", "repetition_penalty", 1.0),
    "presence_penalty": ("--presence-penalty", "presence_penalty", 0.0),
}
EFFORTS = ("low", "medium", "high", "x-high", "max")
PREFILL_MODES = ("exact", "batched")


@dataclass
class GenerateConfig:
    prompt: str | None = None
    prompt_file: Path | None = None
    messages_file: Path | None = None
    system: str | None = None
    raw: bool = False
    thinking: bool | None = None              # None: on when an effort is given
    effort: str | None = None
    max_tokens: int = 256
    max_ctx: int = 4096
    # None: the model card's value (then the built-in default); the report says which.
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float = 0.0
    greedy: bool = False
    seed: int = 0
    stops: tuple[str, ...] = ()
    logprobs: int = 0
    prefill_mode: str = "exact"
    card_path: Path | None = None
    # Prefix cache across the turns of a --messages conversation: memory budget (MB), optional
    # disk tier and its cap (MB).
    cache: bool = False
    cache_dir: Path | None = None
    cache_mb: int = 2048
    cache_disk_mb: int = 20480
    out: Path | None = None
    command: list[str] | None = field(default=None, repr=False)
    thermal: ThermalOptions = field(default_factory=ThermalOptions)  # --thermal and its thresholds

    @property
    def thinking_enabled(self) -> bool:
        return bool(self.effort) if self.thinking is None else self.thinking

    def check(self) -> None:
        """ConfigError naming the flag for the first bad value; reads nothing but the prompt files."""
        for name, (flag, _, _) in SAMPLING_FROM_CARD.items():
            value = getattr(self, name)
            problem = value is not None and sampling_problem(name, value)
            if problem:
                raise ConfigError(problem, flag)
        for name, flag in (("frequency_penalty", "--frequency-penalty"), ("seed", "--seed")):
            problem = sampling_problem(name, getattr(self, name))
            if problem:
                raise ConfigError(problem, flag)
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ConfigError(f"must be at least 1, got {self.max_tokens!r}", "--max-tokens")
        if not isinstance(self.max_ctx, int) or self.max_ctx < 2:
            raise ConfigError(f"must be at least 2 (the prompt and one token), got {self.max_ctx!r}", "--max-ctx")
        if not isinstance(self.logprobs, int) or self.logprobs < 0:
            raise ConfigError(f"must be >= 0, got {self.logprobs!r}", "--logprobs")
        if self.prefill_mode not in PREFILL_MODES:
            raise ConfigError(f"must be one of {', '.join(PREFILL_MODES)}, got {self.prefill_mode!r}", "--prefill")
        if self.effort is not None and self.effort not in EFFORTS:
            raise ConfigError(f"must be one of {', '.join(EFFORTS)}, got {self.effort!r}", "--effort")
        if any(s == "" for s in self.stops):
            raise ConfigError("a stop string must not be empty", "--stop")
        if self.card_path is not None and not Path(self.card_path).is_file():
            raise ConfigError(f"{self.card_path}: no such model card file", "--card")
        prompt = load_prompt(self.prompt, self.prompt_file, self.messages_file, self.system)
        if self.raw and prompt.plain is None:
            raise ConfigError("--raw needs --prompt or --prompt-file (messages always use the chat template)", "--raw")
        if self.effort and not self.thinking_enabled:
            raise ConfigError("--effort needs thinking mode (drop --no-thinking)", "--effort")
        if self.raw and self.thinking_enabled:
            raise ConfigError("--raw and --thinking do not mix: thinking is part of the chat template", "--raw")
        if (self.cache or self.cache_dir is not None) and self.messages_file is None:
            raise ConfigError("the prefix cache serves a conversation: give --messages", "--cache")
        if self.cache_dir is not None and Path(self.cache_dir).exists() and not Path(self.cache_dir).is_dir():
            raise ConfigError(f"{self.cache_dir} exists and is not a folder", "--cache-dir")
        for flag, value in (("--cache-mb", self.cache_mb), ("--cache-disk-mb", self.cache_disk_mb)):
            if not isinstance(value, int) or value < 0:
                raise ConfigError(f"must be an integer >= 0, got {value!r}", flag)
        check_run_folder(self.out)

    @property
    def cache_enabled(self) -> bool:
        return self.cache or self.cache_dir is not None

    def sampling(self, card: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """Each sampling value and where it came from: "flag", "card", "default" or "--greedy"."""
        values, source = {}, {}
        card_sampling = card.get("sampling") or {}
        for name, (_, card_key, default) in SAMPLING_FROM_CARD.items():
            if getattr(self, name) is not None:
                values[name], source[name] = getattr(self, name), "flag"
            elif card_key in card_sampling:
                values[name], source[name] = card_sampling[card_key], "card"
            else:
                values[name], source[name] = default, "default"
        if self.greedy:
            values["temperature"], source["temperature"] = 0.0, "--greedy"
        return values, source


def _thinking_budget(card: dict[str, Any], config: GenerateConfig):
    """(budget derivation or None, budget tokens or None)."""
    from ds4kit.cards.budget import derive_thinking_budget

    if not config.thinking_enabled:
        return None, None
    budget = derive_thinking_budget(card, max_tokens=config.max_tokens, reasoning_effort=config.effort,
                                    max_ctx=config.max_ctx, announce=False)
    if config.effort is None:
        # Thinking without an effort: the card's tiers do not apply; the whole budget may think.
        return budget, max(0, config.max_tokens - int(card.get("hard_limit_reply_budget", 0)))
    return budget, budget.tokens


def _prefix_cache(target: Any, config: GenerateConfig, run: Any):
    """The prefix cache for a conversation, or None (not asked for, or the target cannot: warned)."""
    if not config.cache_enabled:
        return None
    problem = cache_problem(target)
    if problem:
        run.warn("prefix-cache-disabled", f"prefix cache disabled: {problem}")
        return None
    return target.prefix_cache(config.max_ctx, max_bytes=config.cache_mb << 20, cache_dir=config.cache_dir,
                               disk_max_bytes=(config.cache_disk_mb << 20) if config.cache_dir else None,
                               warn=lambda m: run.warn("prefix-cache", m))


def run(config: GenerateConfig, target: Any, *, on_text: Callable[[str], None] | None = None,
        say: Callable[[str], None] = say_stderr, stop: StopSignals | None = None) -> Path:
    """Generate; returns the path of report.json. Interrupted (SIGINT/SIGTERM), it keeps the tokens
    generated so far and writes every file with status "interrupted"."""
    from ds4kit.cards import resolve_card
    from ds4kit.chat.markers import EOS, THINK_CLOSE

    config.check()
    prompt = load_prompt(config.prompt, config.prompt_file, config.messages_file, config.system)
    thinking = config.thinking_enabled
    with stop_signals(stop) as stop, start_run("generate", config.out, command=config.command) as run:
        load_target(run, target, "the text is meaningless")
        ident = target.identity()
        card = resolve_card(ident.path, ident.name, ident.architecture, card_path=config.card_path, announce=False)
        run.set_card(card.to_manifest())
        budget, budget_tokens = _thinking_budget(card.card, config)
        if budget is not None and budget.warning:
            run.warn("thinking-budget", budget.warning)

        prompt_text = prompt.plain if config.raw else target.render_chat(prompt.messages, thinking=thinking,
                                                                       effort=config.effort)
        prompt_ids = target.tokenize(prompt_text, parse_special=not config.raw)
        if len(prompt_ids) >= config.max_ctx:
            raise ValueError(f"the prompt is {len(prompt_ids)} tokens, which does not fit --max-ctx {config.max_ctx}")
        values, source = config.sampling(card.card)
        gen = GenerationConfig(max_tokens=config.max_tokens, frequency_penalty=config.frequency_penalty,
                               seed=config.seed, stop_token_ids=(target.token_id(EOS),),
                               stop_strings=tuple(config.stops), logprobs=config.logprobs,
                               prefill_mode=config.prefill_mode, thinking_budget=budget_tokens,
                               think_end_id=target.token_id(THINK_CLOSE) if thinking else None, **values)
        needs = {"token_ids": "output token ids (tokens.csv)"}
        if config.logprobs:
            needs["top_logprobs"] = f"top-{config.logprobs} log-probabilities (--logprobs)"
        not_measured = target.capabilities.missing(needs)
        for gap in not_measured:
            run.warn("not-measured", f"{target.kind} target: no {gap['what']}")
        say(f"model {ident.path.name if ident.path else ident.name}: {len(prompt_ids)} prompt tokens, sampling "
            + ", ".join(f"{k}={v}" for k, v in values.items()) + f", seed {config.seed}")

        tel = RunTelemetry(run, config.thermal, stop, say)
        with tel:
            streamed: list[str] = []

            def on_token(ev) -> None:
                streamed.append(ev.text)
                tel.progress(len(streamed))
                if on_text is not None:
                    on_text(ev.text)

            extra: dict[str, Any] = {}
            replies = 0 if prompt.plain is not None else len(turns_to_generate(prompt.messages))
            if config.cache_enabled or replies > 1:
                cache = _prefix_cache(target, config, run)
                turns, rows = run_turns(target, prompt.messages, gen, config, cache=cache, on_token=on_token,
                                        should_stop=stop, say=say)
                if turns:
                    res, prompt_ids = turns[-1].result, turns[-1].prompt_ids
                    prompt_text = target.detokenize(prompt_ids)
                elif stop.requested:  # stopped before the first turn began: an empty, interrupted result
                    res = GenerationResult(list(prompt_ids), [], "", "interrupted", "before the first turn", 0.0, 0.0, [])
                else:
                    raise ValueError(f"{config.messages_file}: no user message left without a reply")
                streamed = [res.text]  # the last turn's text is what the report's output holds
                write_turns(run.add_file("turns", "turns.jsonl"), rows)
                if cache is not None and config.cache_dir is not None:
                    cache.flush()
                extra = {"turns": rows, "cache": {
                    "enabled": cache is not None, "dir": str(config.cache_dir) if config.cache_dir else None,
                    "memory_mb": config.cache_mb, "disk_mb": config.cache_disk_mb if config.cache_dir else None,
                    "stats": dict(cache.stats) if cache is not None else None}}
            else:
                res = target.generate(prompt_ids, gen, max_ctx=config.max_ctx, on_token=on_token, should_stop=stop)
        # The decoder's last flush (an unfinished UTF-8 sequence) is part of the text: stream it too.
        sent = "".join(streamed)
        if on_text is not None and len(res.text) > len(sent) and res.text.startswith(sent):
            on_text(res.text[len(sent):])

        write_token_table(run.add_file("tokens", "tokens.csv"), res, target.detokenize)
        if config.logprobs:
            write_logprobs(run.add_file("logprobs", "logprobs.jsonl"), res)
        if res.spec_decisions is not None:
            write_spec_decisions(run.add_file("speculation", "speculation.jsonl"), res)
        results = results_dict(res, prompt_text=prompt_text, values=values, source=source, seed=config.seed,
                               thinking=thinking, effort=config.effort, budget=budget, budget_tokens=budget_tokens,
                               max_tokens=config.max_tokens, max_ctx=config.max_ctx,
                               prefill_mode=config.prefill_mode, threads=target.describe()["threads"],
                               logprobs=config.logprobs, not_measured=not_measured)
        results.update(extra)
        results["telemetry"] = tel.results()
        interrupted = res.stop_reason == "interrupted"
        say(f"{len(res.tokens)} tokens, stop: {res.stop_reason}"
            + (f" ({stop.signal_name})" if interrupted else "")
            + f"; prefill {rate(res.prefill_tok_s)}, decode {rate(res.decode_tok_s)}")
        summary = summary_md(results) + (turns_summary(extra["turns"]) if extra else "")
        run.finish(results, status="interrupted" if interrupted else "ok", summary_md=summary,
                   interrupt=stop.record() if interrupted else None)
    return run.folder / "report.json"
