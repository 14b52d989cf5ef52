"""The `eval-humaneval` job: generate (or take --samples), then grade in sandboxes.

    from ds4kit.evals.humaneval import job
    path = job.run(job.HumanEvalConfig(samples_file=Path("s.jsonl"), out=Path("runs/he")), target=None)

Generation runs first and releases the model; grading starts only after, with the engine idle
(so the tests' time limits are not skewed by the model's load). Files: samples.jsonl (one
generated sample per line, evalplus's format), items.jsonl (one verdict per line),
categories.png, summary.md, report.json. --resume continues both logs.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ds4kit.errors import ConfigError
from ds4kit.evals.humaneval.grading import TimeLimits
from ds4kit.evals.humaneval.sandbox import Limits
from ds4kit.interrupts import StopSignals
from ds4kit.jobs.common import load_target, say_stderr, stop_signals
from ds4kit.jobs.telemetry import RunTelemetry, ThermalOptions
from ds4kit.reports.items import ItemLog

KIND = "eval-humaneval"
EFFORTS = ("low", "medium", "high", "x-high", "max")
CONTAINMENTS = ("auto", "bubblewrap", "unshare", "rlimits")


@dataclass
class HumanEvalConfig:
    dataset: Path | None = None
    samples_file: Path | None = None      # grade these instead of generating
    thinking: bool = False
    effort: str | None = None
    budget: int | None = None             # new tokens per task (default: the card's)
    greedy: bool = False
    seed: int = 0
    limit: int | None = None              # only the first N tasks
    jobs: int | None = None               # sandboxes at a time (default: usable CPUs)
    containment: str = "auto"
    limits: Limits = field(default_factory=Limits)
    time_limits: TimeLimits = field(default_factory=TimeLimits)
    card_path: Path | None = None
    resume: bool = False
    out: Path | None = None
    command: list[str] | None = field(default=None, repr=False)
    thermal: ThermalOptions = field(default_factory=ThermalOptions)  # --thermal and its thresholds

    @property
    def thinking_enabled(self) -> bool:
        return self.thinking or self.effort is not None

    def check(self) -> None:
        from ds4kit.reports.run import check_run_folder

        if self.effort is not None and self.effort not in EFFORTS:
            raise ConfigError(f"must be one of {', '.join(EFFORTS)}, got {self.effort!r}", "--effort")
        if self.budget is not None and (not isinstance(self.budget, int) or self.budget < 1):
            raise ConfigError(f"must be at least 1 token, got {self.budget!r}", "--budget")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"must be at least 1, got {self.limit!r}", "--limit")
        if self.jobs is not None and self.jobs < 1:
            raise ConfigError(f"must be at least 1, got {self.jobs!r}", "--jobs")
        if self.containment not in CONTAINMENTS:
            raise ConfigError(f"must be one of {', '.join(CONTAINMENTS)}, got {self.containment!r}",
                              "--containment")
        if self.samples_file is not None:
            if not Path(self.samples_file).is_file():
                raise ConfigError(f"{self.samples_file}: no such samples file", "--samples")
            if self.thinking_enabled or self.budget is not None:
                raise ConfigError("--samples grades existing samples: --thinking, --effort and --budget "
                                  "apply to generation only", "--samples")
        if self.card_path is not None and not Path(self.card_path).is_file():
            raise ConfigError(f"{self.card_path}: no such model card file", "--card")
        check_run_folder(self.out, self.resume)

    def identity(self, dataset_sha: str) -> dict[str, Any]:
        """What a resumed run must share with the run it continues."""
        return {"dataset_sha256": dataset_sha, "samples_file": str(self.samples_file) if self.samples_file else None,
                "thinking": self.thinking_enabled, "effort": self.effort, "budget": self.budget,
                "greedy": self.greedy, "seed": self.seed, "limit": self.limit}


def _check_resume(folder: Path, identity: dict[str, Any], resume: bool) -> None:
    path = folder / "run-config.json"
    if resume and path.is_file():
        before = json.loads(path.read_text(encoding="utf-8"))
        diff = [k for k in identity if before.get(k) != identity[k]]
        if diff:
            raise ConfigError(f"{folder} was started with other settings ({', '.join(diff)}: "
                              + ", ".join(f"{before.get(k)!r} then, {identity[k]!r} now" for k in diff)
                              + "); resume it with the same ones or choose another --out", "--resume")


def _sampling(card: dict[str, Any], config: HumanEvalConfig) -> tuple[dict[str, Any], dict[str, str]]:
    from ds4kit.jobs.generate import GenerateConfig

    return GenerateConfig(greedy=config.greedy).sampling(card)


def _generate(config: HumanEvalConfig, target: Any, run: Any, problems: dict, stop: StopSignals,
              say: Callable[[str], None], tel: RunTelemetry) -> tuple[dict[str, Any], bool]:
    from tqdm import tqdm

    from ds4kit.cards import resolve_card
    from ds4kit.evals.humaneval.generation import derive_budgets, generate_all

    load_target(run, target, "the generated code is meaningless")
    ident = target.identity()
    card = resolve_card(ident.path, ident.name, ident.architecture, card_path=config.card_path, announce=False)
    run.set_card(card.to_manifest())
    budgets = derive_budgets(card.card, thinking=config.thinking_enabled, effort=config.effort, budget=config.budget)
    if budgets.derivation.get("warning"):
        run.warn("thinking-budget", budgets.derivation["warning"])
    values, source = _sampling(card.card, config)
    log = ItemLog(run.add_file("samples", "samples.jsonl"), key="task_id")
    say(f"generating {len(problems)} tasks ({len(log.done_keys() & set(problems))} already done), "
        f"{budgets.max_tokens} tokens each" + (f", thinking {budgets.thinking_tokens}" if config.thinking_enabled
                                               else ", no thinking"))
    bar = tqdm(total=len(problems), initial=len(log.done_keys() & set(problems)), desc="generate", unit="task")
    try:
        finished = generate_all(target, problems, log, budgets=budgets, thinking=config.thinking_enabled,
                                effort=config.effort, sampling=values, seed=config.seed, should_stop=stop,
                                progress=lambda t: (bar.update(1), tel.progress(bar.n)))
    finally:
        bar.close()
    rows = [r for r in log.read() if r["task_id"] in problems]
    speeds = sorted(r["decode_tok_s"] for r in rows if r.get("decode_tok_s"))
    info = {"thinking": config.thinking_enabled, "effort": config.effort, "budgets": budgets.derivation,
            "sampling": values, "sampling_source": source, "seed": config.seed, "generated": len(rows),
            "truncated": sum(bool(r["truncated"]) for r in rows),
            "thinking_budget_hits": sum(r.get("thinking_budget_hit_at") is not None for r in rows),
            "output_tokens": sum(r["output_tokens"] for r in rows),
            "decode_tok_s_median": speeds[len(speeds) // 2] if speeds else None}
    # The model is released before grading: the sandboxes run with the engine idle.
    release = getattr(target, "release", None)
    if release is not None:
        release()
    return info, finished


def run(config: HumanEvalConfig, target: Any = None, *, say: Callable[[str], None] = say_stderr,
        stop: StopSignals | None = None) -> Path:
    """Returns the path of report.json. target is None with --samples."""
    from tqdm import tqdm

    from ds4kit.evals.humaneval.dataset import load_dataset
    from ds4kit.evals.humaneval.grading import grade_all, read_samples
    from ds4kit.evals.humaneval.output import plot_categories, results_from, summary_md
    from ds4kit.evals.humaneval.sandbox import Sandbox
    from ds4kit.engine.model import usable_cpus
    from ds4kit.reports import start_run
    from ds4kit.reports.atomic import atomic_write_json

    config.check()
    dataset = load_dataset(config.dataset)
    if dataset.base_only:
        say(f"dataset {dataset.path}: the original HumanEval tests only (base-only): no pass@1 plus")
    problems = dict(list(dataset.problems.items())[:config.limit] if config.limit else dataset.problems)
    samples = read_samples(config.samples_file, dataset.problems) if config.samples_file else None
    if samples is not None and config.limit:
        samples = {t: s for t, s in samples.items() if t in problems}
    identity = config.identity(dataset.sha256)
    if config.out is not None:
        _check_resume(Path(config.out), identity, config.resume)
    box = Sandbox(config.limits, method=config.containment)
    jobs = config.jobs or usable_cpus()
    with stop_signals(stop) as stop, start_run(KIND, config.out, resume=config.resume,
                                               command=config.command) as run:
        atomic_write_json(run.path("run-config.json"), identity)
        run.report["files"]["config"] = "run-config.json"
        if dataset.base_only:
            run.warn("base-only", f"dataset {dataset.path} has the original HumanEval tests only: "
                     "pass@1 plus is not measured")
        if box.method != "bubblewrap":
            run.warn("containment", f"bubblewrap unusable ({box.why}); samples run under {box.method}: "
                     + box.describe()["filesystem"])
        if samples is not None and len(samples) < len(problems):
            run.warn("samples-cover", f"{config.samples_file} has samples for {len(samples)} of {len(problems)} "
                     "tasks: pass@1 is over those it has")
        generation, finished = None, True
        tel = RunTelemetry(run, config.thermal, stop, say)  # progress: tasks generated, then graded
        with tel:
            if samples is None:
                tel.mark("generation")
                generation, finished = _generate(config, target, run, problems, stop, say, tel)
                samples = {r["task_id"]: r for r in ItemLog(run.path("samples.jsonl"), key="task_id").read()
                           if r["task_id"] in problems}
            graded = ItemLog(run.add_file("items", "items.jsonl"), key="task_id")
            todo = len(set(samples) - graded.done_keys())
            t0 = time.monotonic()
            if finished:
                say(f"grading {len(samples)} samples ({len(samples) - todo} already graded) under {box.method}, "
                    f"{jobs} at a time")
                bar = tqdm(total=len(samples), initial=len(samples) - todo, desc="grade", unit="task")
                tel.mark("grading")
                try:
                    finished = grade_all(box, dataset, samples, graded, limits=config.time_limits, jobs=jobs,
                                         should_stop=stop, on_done=lambda r: (bar.update(1), tel.progress(bar.n)))
                finally:
                    bar.close()
            seconds = time.monotonic() - t0
        order = {t: i for i, t in enumerate(dataset.problems)}
        verdicts = sorted((v for v in graded.read() if v["task_id"] in samples), key=lambda v: order[v["task_id"]])
        results = results_from(verdicts, base_only=dataset.base_only)
        results.update({
            "dataset": dataset.describe(), "mode": "samples" if config.samples_file else "model",
            "samples_file": str(config.samples_file) if config.samples_file else None,
            "generation": generation, "containment": box.describe(),
            "time_limits": asdict(config.time_limits),
            "grading": {"seconds": round(seconds, 3), "graded_now": len(verdicts) - (len(samples) - todo),
                        "jobs": jobs},
            "complete": finished and len(verdicts) == len(problems),
            "telemetry": tel.results(),
        })
        plot_categories(run.add_file("plot", "categories.png"), results,
                        f"HumanEval{'' if dataset.base_only else '+'}: {len(verdicts)} tasks")
        p = results["pass_at_1"]
        say(f"pass@1 base {p['base']}, plus {p['plus']} over {p['n_tasks']} tasks; "
            + ", ".join(f"{c} {n}" for c, n in results["categories"].items() if n))
        interrupted = stop.requested
        run.finish(results, status="interrupted" if interrupted else "ok", summary_md=summary_md(results),
                   interrupt=stop.record() if interrupted else None)
    return run.folder / "report.json"
