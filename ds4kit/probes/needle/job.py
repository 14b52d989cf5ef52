"""`probe needle`: is a fact placed at a given depth of a long context found, and does restoring the
context from the prefix cache change the answer?

    from ds4kit.probes.needle import NeedleConfig, run
    report = run(NeedleConfig(lengths=(2048, 4096), depths=(0, 50, 100), out=Path("runs/n")), target)

Cells are lengths x depths; each is prompt building (ds4kit.probes.needle.haystack), the two arms
(ds4kit.probes.needle.cells) and exact-literal scoring (ds4kit.probes.needle.scoring). Each finished
cell is one fsynced line of cells.jsonl, so a kill at any moment loses no finished cell and
`--resume` runs only the rest (with the settings the run started with: others are refused).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ds4kit.errors import ConfigError
from ds4kit.interrupts import StopSignals
from ds4kit.jobs.telemetry import RunTelemetry, ThermalOptions
from ds4kit.jobs.common import load_target, say_stderr, stop_signals
from ds4kit.reports import start_run
from ds4kit.reports.atomic import atomic_write_json
from ds4kit.reports.run import check_run_folder

ARMS = ("cold", "restored")
SETTINGS_FILE = "settings.json"


def parse_lengths(value: str) -> tuple[int, ...]:
    """'2k,4k,8k' -> (2048, 4096, 8192); plain integers are tokens."""
    out = []
    for part in (p.strip().lower() for p in value.split(",") if p.strip()):
        try:
            out.append(int(float(part[:-1]) * 1024) if part.endswith("k") else int(part))
        except ValueError:
            raise ConfigError(f"{part!r} is not a length (tokens, or a number followed by k)", "--lengths") from None
    return tuple(out)


def parse_depths(value: str) -> tuple[float, ...]:
    try:
        return tuple(float(p) for p in value.split(",") if p.strip())
    except ValueError:
        raise ConfigError(f"{value!r} is not a comma list of percentages", "--depths") from None


@dataclass
class NeedleConfig:
    lengths: tuple[int, ...] = (2048, 4096, 8192, 16384)
    depths: tuple[float, ...] = tuple(float(d) for d in range(0, 101, 10))
    suite: str = "default"                 # probes/needle/<suite>.json, or a path
    arms: tuple[str, ...] = ARMS
    max_tokens: int = 16
    prefill_mode: str = "batched"
    resume: bool = False
    out: Path | None = None
    command: list[str] | None = field(default=None, repr=False)
    thermal: ThermalOptions = field(default_factory=ThermalOptions)  # --thermal and its thresholds

    def check(self) -> None:
        if not self.lengths or any(not isinstance(n, int) or n < 64 for n in self.lengths):
            raise ConfigError(f"each length must be at least 64 tokens, got {list(self.lengths)}", "--lengths")
        if not self.depths or any(not 0 <= d <= 100 for d in self.depths):
            raise ConfigError(f"each depth must be a percentage in [0, 100], got {list(self.depths)}", "--depths")
        if len(set(self.lengths)) != len(self.lengths) or len(set(self.depths)) != len(self.depths):
            raise ConfigError("a length or depth is given twice", "--lengths")
        if not self.arms or any(a not in ARMS for a in self.arms) or "cold" not in self.arms:
            raise ConfigError(f"cold, optionally with restored; got {','.join(self.arms)!r}", "--arms")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ConfigError(f"must be at least 1, got {self.max_tokens!r}", "--max-tokens")
        self.load_spec()
        check_run_folder(self.out, self.resume)
        if self.resume and self.out is not None:
            _check_resume(Path(self.out), self.settings(), None)

    def load_spec(self):
        from ds4kit.probes.needle.haystack import NeedleSpec
        from ds4kit.resources import probes_dir

        path = Path(self.suite)
        if not path.is_file():
            path = probes_dir() / "needle" / f"{self.suite}.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"no needle suite {self.suite!r} (looked for {path})", "--suite") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: not a readable JSON file ({exc})", "--suite") from None
        keys = ("text", "instruction", "needle", "question", "answer")
        missing = [k for k in keys if not isinstance(doc.get(k), str) or not doc[k]] if isinstance(doc, dict) else keys
        if missing:
            raise ConfigError(f"{path}: needs non-empty strings {', '.join(missing)}", "--suite")
        if doc["answer"] not in doc["needle"]:
            raise ConfigError(f"{path}: the answer {doc['answer']!r} is not in the needle", "--suite")
        return NeedleSpec(str(doc.get("id", path.stem)), *(doc[k] for k in keys))

    def settings(self) -> dict[str, Any]:
        """What a resumed run must share with the run it continues."""
        return {"lengths": list(self.lengths), "depths": list(self.depths), "suite": asdict(self.load_spec()),
                "arms": list(self.arms), "max_tokens": self.max_tokens, "prefill_mode": self.prefill_mode}


def cell_id(length: int, depth: float) -> str:
    return f"L{length}-d{depth:g}"


def _check_resume(folder: Path, settings: dict[str, Any], model: dict[str, Any] | None) -> None:
    """ConfigError naming --resume unless the run in `folder` was started with these settings (and,
    once the model is loaded, this model)."""
    path = folder / SETTINGS_FILE
    if not path.exists():
        return
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} is unreadable ({exc}); start a new run folder", "--resume") from None
    want = {"settings": settings, "model_sha256": (model or {}).get("sha256")}
    for key in ("settings", "model_sha256") if model is not None else ("settings",):
        if before.get(key) != want[key]:
            raise ConfigError(f"{folder} was started with other {key.replace('_', ' ')} ({before.get(key)!r}); "
                              "resume with the same ones or choose another --out", "--resume")


def run(config: NeedleConfig, target: Any, *, say: Callable[[str], None] = say_stderr,
        stop: StopSignals | None = None, progress: bool = True,
        after_cell: Callable[[dict[str, Any]], None] | None = None) -> Path:
    from ds4kit.chat.markers import EOS
    from ds4kit.engine.generate import GenerationConfig
    from ds4kit.jobs.generate_turns import cache_problem
    from ds4kit.probes.needle.cells import run_cell
    from ds4kit.probes.needle.haystack import build_cell, load_text, sentences
    from ds4kit.probes.needle.output import results_dict, summary_md
    from ds4kit.probes.needle.plot import heatmap
    from ds4kit.probes.progress import TurnProgress

    config.check()
    spec = config.load_spec()
    settings = config.settings()
    with stop_signals(stop) as stop, start_run("probe-needle", config.out, resume=config.resume,
                                               command=config.command) as run:
        load_target(run, target, "expect a score of about zero")
        model_entry = run.report["manifest"].get("model")
        if config.resume:
            _check_resume(run.folder, settings, model_entry)
        atomic_write_json(run.folder / SETTINGS_FILE, {"settings": settings,
                                                       "model_sha256": (model_entry or {}).get("sha256")})
        arms = list(config.arms)
        if "restored" in arms:
            problem = cache_problem(target)
            if problem:
                run.warn("not-measured", f"no restored arm: {problem}")
                arms.remove("restored")
        log = run.items("cells.jsonl", key="id")
        done = {c["id"]: c for c in log.read()}
        grid = [(n, d) for n in config.lengths for d in config.depths]
        todo = [(n, d) for n, d in grid if cell_id(n, d) not in done]
        if done:
            say(f"resuming: {len(grid) - len(todo)} of {len(grid)} cells already done")
        sents = sentences(load_text(spec.text))
        counts = [len(target.tokenize(x, parse_special=False)) for x in sents]
        gen = GenerationConfig(max_tokens=config.max_tokens, temperature=0.0, stop_token_ids=(target.token_id(EOS),),
                               prefill_mode=config.prefill_mode)
        # A first prefill pays page faults on the weights; no cell's timing should.
        target.session(256).prefill(target.tokenize("warm up"), "batched")
        tel = RunTelemetry(run, config.thermal, stop, say)  # progress: cells finished
        with tel, TurnProgress(len(todo), enabled=progress) as bar:
            for n, d in todo:
                if stop.requested:
                    break
                bar.describe(f"cell {cell_id(n, d)}")
                prompt = build_cell(target, spec, sents, counts, n, d)
                max_ctx = len(prompt.ids) + config.max_tokens + 1
                res = run_cell(target, prompt, gen, max_ctx=max_ctx, literal=spec.answer,
                               restored="restored" in arms, should_stop=stop)
                if res is None:
                    break
                cell = {"id": cell_id(n, d), "length": n, "depth": d, "context_tokens": len(prompt.ids),
                        "haystack_tokens": prompt.haystack_tokens, "haystack_start": prompt.haystack_start,
                        "needle_position": prompt.needle_position, "needle_tokens": prompt.needle_tokens,
                        "depth_actual": prompt.depth_actual, "question_position": prompt.question_position,
                        "arms": res,
                        "arms_agree": res["cold"]["ids"] == res["restored"]["ids"] if "restored" in res else None}
                log.append(cell)
                done[cell["id"]] = cell
                bar.step()
                tel.progress(len(done))
                if after_cell:
                    after_cell(cell)
        cells = [done[cell_id(n, d)] for n, d in grid if cell_id(n, d) in done]
        if cells:
            heatmap(run.add_file("heatmap", "needle.png"), cells, list(config.lengths), list(config.depths), arms)
        results = results_dict(spec, cells, settings, arms=arms, total=len(grid))
        results["telemetry"] = tel.results()
        say(f"{results['cells_done']} of {len(grid)} cells; found: "
            + ", ".join(f"{a} {results['score'][a]['found']}/{results['score'][a]['cells']}" for a in arms)
            + (f"; arms agree on {results['arms_agree']} of {results['cells_done']}" if "restored" in arms else ""))
        interrupted = stop.requested
        run.finish(results, status="interrupted" if interrupted else "ok", summary_md=summary_md(results),
                   interrupt=stop.record() if interrupted else None)
    return run.folder / "report.json"
