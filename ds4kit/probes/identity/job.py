"""`probe identity`: every arm's greedy tokens against target-only, item by item.

    report = run(IdentityConfig(suite="quick", arms="all", out=...), target)

Each item first runs a reference pass (target-only, untimed: the scripted drafter's continuation
and what every arm is compared with), then every arm, target-only among them, forward on even
items and backward on odd ones, so a slow drift of the machine (heat, background load) cancels
out over each pair of items instead of favouring the arms that run late. The timed target-only arm must equal its reference pass too
(plain decoding is deterministic). Items marked `warmup` count for identity, not for speed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ds4kit.interrupts import StopSignals
from ds4kit.jobs.common import load_target, say_stderr, stop_signals
from ds4kit.jobs.telemetry import RunTelemetry, ThermalOptions
from ds4kit.probes.identity.arms import DEFAULT_ACCEPTANCE, TARGET_ONLY, select_arms
from ds4kit.probes.identity.compare import first_divergence, tokens_sha256
from ds4kit.probes.identity.output import arm_summaries, plot_identity, summary_md
from ds4kit.probes.identity.runners import EngineArmRunner, SessionArmRunner
from ds4kit.probes.suites import load_suite
from ds4kit.reports.run import start_run


@dataclass
class IdentityConfig:
    suite: str = "quick"
    arms: str = "all"
    acceptances: tuple[float, ...] = DEFAULT_ACCEPTANCE
    max_tokens: int | None = None       # overrides every item's max_tokens
    max_ctx: int = 8192
    top_k: int = 5                      # log-probabilities kept per index (divergence reports)
    out: Path | None = None
    command: list[str] = field(default_factory=list)
    thermal: ThermalOptions = field(default_factory=ThermalOptions)

    def check(self) -> None:
        from ds4kit.errors import ConfigError

        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"must be >= 1, got {self.max_tokens}", "--max-tokens")
        if self.top_k < 2:
            raise ConfigError(f"must be >= 2 (a margin needs two), got {self.top_k}", "--top-k")
        for a in self.acceptances:
            if not 0.0 <= a <= 1.0:
                raise ConfigError(f"acceptance {a} is outside [0, 1]", "--acceptance")


def arm_order(arms: list, n_item: int) -> list:
    """Forward on even items, backward on odd ones (A B C, C B A, ...): over each pair of items
    every arm's mean position is the same, so a drift of the machine's speed during the run (load
    or heat rising or falling) cancels out of the ratios instead of favouring the arms that run late."""
    return list(arms) if n_item % 2 == 0 else list(reversed(arms))


def _runner(target: Any, config: IdentityConfig, eos: int | None):
    if target.kind == "embedded":
        return EngineArmRunner(target, max_ctx=config.max_ctx, top_k=config.top_k, eos=eos)
    return SessionArmRunner(lambda: target.session(config.max_ctx), top_k=config.top_k, eos=eos)


def run(config: IdentityConfig, target: Any, *, say: Callable[[str], None] = say_stderr,
        stop: StopSignals | None = None) -> Path:
    from ds4kit.chat.markers import EOS

    config.check()
    suite = load_suite("identity", config.suite)
    have_drafter = getattr(target, "speculation", None) is not None or getattr(target.options, "drafter", None)
    arms, notes = select_arms(config.arms, have_drafter=bool(have_drafter) and target.kind == "embedded",
                              acceptances=config.acceptances)
    with stop_signals(stop) as stop, start_run("probe-identity", config.out, command=config.command) as run:
        for note in notes:
            run.warn("arm-skipped", note)
        load_target(run, target)
        eos = target.token_id(EOS)
        runner = _runner(target, config, eos)
        log = run.items("items.jsonl", key="key")
        per_arm: dict[str, list] = {a.name: [] for a in arms}
        from tqdm import tqdm

        bar = tqdm(total=len(suite["items"]) * (len(arms) + 1), desc="identity", unit="run", disable=None)
        interrupted = False
        tel, done_tokens = RunTelemetry(run, config.thermal, stop, say), 0
        with tel:
            for n_item, item in enumerate(suite["items"]):
                if stop.requested:
                    interrupted = True
                    break
                prompt = target.tokenize(target.render_chat(item["messages"], thinking=bool(item.get("thinking"))))
                max_tokens = config.max_tokens or int(item.get("max_tokens", 128))
                # The reference pass (target-only, untimed) gives the scripted drafter its continuation;
                # the timed arms then run forward or backward (arm_order), target-only among them.
                ref = runner.run(arms[0], prompt, max_tokens, None, item_seed=n_item)
                bar.update(1)
                for arm in arm_order(arms, n_item):
                    if stop.requested:
                        interrupted = True
                        break
                    # Timed without log-probabilities (their cost per token is the probe's, not the
                    # engine's); an arm that diverges runs again with them for the report.
                    res = runner.run(arm, prompt, max_tokens, ref.tokens, item_seed=n_item, logprobs=False)
                    div = first_divergence(ref, res)
                    if div is not None:
                        again = runner.run(arm, prompt, max_tokens, ref.tokens, item_seed=n_item)
                        res.top = again.top
                        div = first_divergence(ref, res)
                        # The top-k come from that second run: they describe the timed run's tokens
                        # only if it produced the same ones (a width-dependent engine may not).
                        div["top_from_rerun"], div["rerun_same_tokens"] = True, again.tokens == res.tokens
                    per_arm[arm.name].append((item, res, div))
                    row = {"key": f"{item['id']}/{arm.name}", "item": item["id"], "arm": arm.name,
                           "warmup": bool(item.get("warmup")), "prompt_tokens": len(prompt), "tokens": res.tokens,
                           "sha256": tokens_sha256([res.tokens]), "decode_s": res.decode_s,
                           "tok_s": len(res.tokens) / res.decode_s if res.decode_s > 0 else None,
                           "identical": div is None, "divergence": div, "speculation": res.speculation,
                           "errors": res.errors}
                    log.append(row)
                    bar.update(1)
                    done_tokens += len(res.tokens)
                    tel.progress(done_tokens)
                    if div is not None:
                        say(f"{item['id']}: {arm.name} diverges from target-only at token {div['index']} "
                            f"(margin {div['reference_top2_margin']})")
                if interrupted:
                    break
        bar.close()
        arm_rows = arm_summaries(arms, per_arm)
        verdict = "identical" if all(a["identical"] for a in arm_rows) else "diverged"
        results = {"verdict": verdict, "suite": {"id": suite["id"], "path": suite["path"], "sha256": suite["sha256"],
                                                 "items": len(suite["items"])},
                   "greedy": True, "arms": arm_rows, "notes": notes,
                   "telemetry": tel.results(),
                   "rule": "identical iff every arm's greedy token ids equal the target-only reference pass's "
                           "on every item"}
        plot_identity(run.add_file("plot", "identity.png"), arm_rows)
        run.finish(results, status="interrupted" if interrupted else "ok", summary_md=summary_md(results),
                   interrupt=stop.record() if interrupted else None)
    return run.folder / "report.json"
