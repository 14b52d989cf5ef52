"""`probe prefix-cache`: does the prefix cache reuse what it should, and does it change nothing?

    from ds4kit.probes.prefix_cache import PrefixCacheProbeConfig, run
    report = run(PrefixCacheProbeConfig(suite="seed-7k", max_tokens=8), target)

Each conversation of the suite runs through the conversation runner twice: arm "off" (no cache,
every turn prefilled cold: the reference answers and the cold prefill times) and arm "on" (one
prefix cache shared by all the suite's conversations). Per turn: prompt tokens, the expected
(ideal) reuse and the reachable reuse, computed by the probe from the token streams
(ds4kit.probes.prefix_cache.reuse), the actual reuse, restore and suffix-prefill seconds, the cold
prefill seconds and whether the answer is token for token the cold one. The verdict and its rule:
ds4kit.probes.prefix_cache.verdict. Sampling is greedy, so both arms must agree exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ds4kit.errors import ConfigError
from ds4kit.interrupts import StopSignals
from ds4kit.jobs.telemetry import RunTelemetry, ThermalOptions
from ds4kit.jobs.common import load_target, say_stderr, stop_signals
from ds4kit.probes.progress import TurnProgress
from ds4kit.reports import start_run
from ds4kit.reports.run import check_run_folder

ARMS = ("on", "off")
PREFILL_MODES = ("exact", "batched")
DEFAULT_MAX_TOKENS = 8


@dataclass
class PrefixCacheProbeConfig:
    suite: str | None = None              # a shipped suite name (probes/prefix-cache) or a suite file
    conversation: Path | None = None      # or a `generate --messages` file
    arms: tuple[str, ...] = ARMS
    max_tokens: int | None = None         # None: the suite's, else DEFAULT_MAX_TOKENS
    max_ctx: int = 8192
    thinking: bool | None = None          # None: the suite's
    prefill_mode: str = "batched"
    cache_mb: int = 8192                  # large: an eviction would make a turn miss what it should reuse
    out: Path | None = None
    command: list[str] | None = field(default=None, repr=False)
    thermal: ThermalOptions = field(default_factory=ThermalOptions)  # --thermal and its thresholds

    def check(self) -> None:
        if (self.suite is None) == (self.conversation is None):
            raise ConfigError("give exactly one of --suite or --conversation", "--suite")
        if not self.arms or any(a not in ARMS for a in self.arms) or len(set(self.arms)) != len(self.arms):
            raise ConfigError(f"a comma list of {', '.join(ARMS)} (each once), got {','.join(self.arms)!r}", "--arms")
        if self.max_tokens is not None and (not isinstance(self.max_tokens, int) or self.max_tokens < 1):
            raise ConfigError(f"must be at least 1, got {self.max_tokens!r}", "--max-tokens")
        if not isinstance(self.max_ctx, int) or self.max_ctx < 2:
            raise ConfigError(f"must be at least 2, got {self.max_ctx!r}", "--max-ctx")
        if self.prefill_mode not in PREFILL_MODES:
            raise ConfigError(f"must be one of {', '.join(PREFILL_MODES)}, got {self.prefill_mode!r}", "--prefill")
        if not isinstance(self.cache_mb, int) or self.cache_mb < 1:
            raise ConfigError(f"must be an integer >= 1, got {self.cache_mb!r}", "--cache-mb")
        self.load_suite()
        check_run_folder(self.out)

    def load_suite(self):
        from ds4kit.probes.prefix_cache.suite import load_conversation_file, load_suite

        return load_suite(self.suite) if self.suite is not None else load_conversation_file(self.conversation)


def _generation(target: Any, max_tokens: int, thinking: bool, prefill_mode: str):
    from ds4kit.chat.markers import EOS, THINK_CLOSE
    from ds4kit.engine.generate import GenerationConfig

    # Thinking: half the replies think, then `</think>` is forced, so the next turn's rendering drops
    # real reasoning (the case where the snapshot before `<think>` serves it).
    return GenerationConfig(max_tokens=max_tokens, temperature=0.0, stop_token_ids=(target.token_id(EOS),),
                            prefill_mode=prefill_mode, thinking_budget=max_tokens // 2 if thinking else None,
                            think_end_id=target.token_id(THINK_CLOSE) if thinking else None)


def _check_fits(target: Any, suite: Any, thinking: bool, max_ctx: int, max_tokens: int) -> None:
    """Each conversation's full rendering (given messages only) plus its replies must fit --max-ctx."""
    from ds4kit.engine.conversation import turns_to_generate

    for conv in suite.conversations:
        n = len(target.tokenize(target.render_chat(conv.messages, thinking=thinking)))
        need = n + len(turns_to_generate(conv.messages)) * (max_tokens + 2)
        if need > max_ctx:
            raise ConfigError(f"conversation {conv.id!r} of {suite.id} needs about {need} positions "
                              f"({n} rendered + the replies), more than --max-ctx {max_ctx}", "--max-ctx")


def run(config: PrefixCacheProbeConfig, target: Any, *, say: Callable[[str], None] = say_stderr,
        stop: StopSignals | None = None, cache_factory: Callable[[Any, int, int], Any] | None = None,
        progress: bool = True) -> Path:
    """Run the probe; returns the path of report.json. cache_factory(target, max_ctx, max_bytes)
    builds the cache-on arm's cache (tests pass a broken one to see the verdict fail)."""
    from ds4kit.engine.conversation import turns_to_generate
    from ds4kit.jobs.generate_turns import cache_problem
    from ds4kit.probes.prefix_cache.arms import run_arm
    from ds4kit.probes.prefix_cache.output import results_dict, summary_md, write_turns
    from ds4kit.probes.prefix_cache.plot import plot_turns
    from ds4kit.probes.prefix_cache.verdict import join_arms, verdict

    config.check()
    suite = config.load_suite()
    max_tokens = config.max_tokens or suite.max_tokens or DEFAULT_MAX_TOKENS
    thinking = suite.thinking if config.thinking is None else config.thinking
    make_cache = cache_factory or (lambda t, ctx, b: t.prefix_cache(ctx, max_bytes=b))
    with stop_signals(stop) as stop, start_run("probe-prefix-cache", config.out, command=config.command) as run:
        load_target(run, target)
        if "on" in config.arms:
            problem = cache_problem(target)
            if problem:
                raise ValueError(f"the prefix cache cannot run on this target: {problem}")
        _check_fits(target, suite, thinking, config.max_ctx, max_tokens)
        gen = _generation(target, max_tokens, thinking, config.prefill_mode)
        # Warm-up: the first prefill pays page faults on the weights; neither arm's first turn should.
        target.session(config.max_ctx).prefill(target.tokenize("warm up the weights before timing"), "batched")

        n_turns = sum(len(turns_to_generate(c.messages)) for c in suite.conversations)
        arms: dict[str, list[dict[str, Any]]] = {}
        cache = None
        tel = RunTelemetry(run, config.thermal, stop, say)  # progress: tokens generated
        tokens_done = [0]

        def on_token(*_: Any) -> None:
            bar.step()
            tokens_done[0] += 1
            tel.progress(tokens_done[0])

        with tel, TurnProgress(len(config.arms) * n_turns * max_tokens, enabled=progress) as bar:
            for arm in sorted(config.arms, key=lambda a: a != "off"):   # the reference arm first
                cache = make_cache(target, config.max_ctx, config.cache_mb << 20) if arm == "on" else None
                arms[arm] = run_arm(target, suite, gen, arm=arm, max_ctx=config.max_ctx, thinking=thinking,
                                    cache=cache, on_turn=bar.describe, on_token=on_token, should_stop=stop)
                if stop.requested:
                    break
        rows = join_arms(arms.get("on"), arms.get("off"))
        complete = not stop.requested and all(len(arms.get(a, [])) == n_turns for a in config.arms)
        judged = verdict(rows, both_arms=set(config.arms) == set(ARMS), complete=complete)
        if judged["verdict"] == "incomplete":
            run.warn("no-verdict", "no verdict: " + ("the run was interrupted" if stop.requested else
                                                    "both arms (on, off) are needed to compare answers"))
        # The state's bytes in a session restored from the longest snapshot (state grows with the position).
        state = target.session(config.max_ctx)
        longest = cache.longest() if cache is not None else None
        if longest is not None:
            state.restore(longest)
        state_bytes = {"at_tokens": state.pos, "state_bytes": state.state_bytes,
                       "snapshot_bytes": longest.bytes if longest is not None else None}
        write_turns(run.add_file("turns", "turns.jsonl"), rows)
        if rows:
            plot_turns(run.add_file("plot", "prefix-cache.png"), rows, suite.id)
        results = results_dict(suite, rows, judged, cache=cache, state_bytes=state_bytes, max_tokens=max_tokens,
                               max_ctx=config.max_ctx, thinking=thinking, arms=config.arms,
                               prefill_mode=config.prefill_mode, cache_mb=config.cache_mb)
        results["telemetry"] = tel.results()
        say(f"verdict: {judged['verdict']} ({judged['turns_ideal']} of {judged['turns']} turns at the ideal reuse)")
        for line in judged["failures"]:
            say(f"  FAIL {line}")
        interrupted = stop.requested
        run.finish(results, status="interrupted" if interrupted else "ok", summary_md=summary_md(results),
                   interrupt=stop.record() if interrupted else None)
    return run.folder / "report.json"
