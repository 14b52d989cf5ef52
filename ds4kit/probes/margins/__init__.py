"""`probe margins`: is every batched verify row what one-token decoding computes?

    from ds4kit.probes import margins
    report = margins.run(margins.MarginsConfig(widths=(1, 2, 4, 8)), build_target(TargetOptions(...)))

For each suite prompt (rendered, tokenized) the last `positions` positions p that leave room for
the widest verify are probed. The state before the first is built by exact prefill (token by
token, as decoding). At each p, on the same state S_p:
  - for every width w: rows = verify(ids[p:p+w]) (one batched forward), then rewind(w);
  - the reference: decode(ids[p]), ..., decode(ids[p+wmax-1]) one at a time, then
    rewind(wmax - 1), which leaves S_{p+1} (built by decoding) for the next position.
Row i of the width-w verify is compared with reference row i: max |dlogit|, bitwise equality,
argmax agreement and the reference's top-2 margin; ds4kit.probes.margins.rows states the rule.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ds4kit.errors import ConfigError
from ds4kit.interrupts import StopSignals
from ds4kit.jobs.common import load_target, say_stderr, stop_signals
from ds4kit.jobs.telemetry import RunTelemetry, ThermalOptions
from ds4kit.probes.margins.rows import RULE, RowResult, compare_row, summarize, verdict
from ds4kit.probes.margins.suite import MarginsItem, load_suite
from ds4kit.reports import start_run
from ds4kit.reports.run import check_run_folder

KIND = "probe-margins"
MAX_WIDTH = 32          # the engine's max_rewind
DEFAULT_TOLERANCE = 0.1  # a top-2 margin of 0.1 nat: the two best tokens' probabilities within 10.5%


@dataclass
class MarginsConfig:
    widths: tuple[int, ...] = tuple(range(1, 9))
    suite: str | Path = "default"
    positions: int = 16                 # per prompt
    tolerance: float = DEFAULT_TOLERANCE
    progress: bool = True
    out: Path | None = None
    command: list[str] | None = field(default=None, repr=False)
    thermal: ThermalOptions = field(default_factory=ThermalOptions)  # --thermal and its thresholds

    def check(self) -> None:
        if not self.widths or any(not isinstance(w, int) or not 1 <= w <= MAX_WIDTH for w in self.widths):
            raise ConfigError(f"widths must lie in 1..{MAX_WIDTH}, got {list(self.widths)}", "--widths")
        if not isinstance(self.positions, int) or self.positions < 1:
            raise ConfigError(f"must be at least 1, got {self.positions!r}", "--positions")
        if not isinstance(self.tolerance, (int, float)) or not math.isfinite(self.tolerance) or self.tolerance < 0:
            raise ConfigError(f"must be a finite number >= 0 (a top-2 logit margin), got {self.tolerance!r}",
                              "--tolerance")
        load_suite(self.suite)
        check_run_folder(self.out)


def parse_widths(text: str) -> tuple[int, ...]:
    """'1-8', '1,2,4', '2-4,8' -> sorted distinct widths; ConfigError naming --widths otherwise."""
    out: set[int] = set()
    try:
        for part in text.split(","):
            part = part.strip()
            lo, _, hi = part.partition("-")
            a, b = int(lo), int(hi) if hi else int(lo)
            if a > b:
                raise ValueError
            out.update(range(a, b + 1))
    except ValueError:
        raise ConfigError(f"expected a list like 1-8 or 1,2,4 or 2-4,8, got {text!r}", "--widths") from None
    return tuple(sorted(out))


def _probe_positions(n_tokens: int, wmax: int, want: int) -> list[int]:
    last = n_tokens - wmax
    return list(range(max(0, last - want + 1), last + 1)) if last >= 0 else []


def _prompt_ids(target: Any, item: MarginsItem) -> list[int]:
    if item.raw:
        return target.tokenize(item.prompt, parse_special=False)
    return target.tokenize(target.render_chat([{"role": "user", "content": item.prompt}]))


def _probe_position(session: Any, ids: list[int], p: int, widths: list[int], item_id: str) -> list[RowResult]:
    wmax = max(widths)
    verified = {}
    for w in widths:
        verified[w] = session.verify(ids[p:p + w])
        session.rewind(w)
    ref = [session.decode(t) for t in ids[p:p + wmax]]
    session.rewind(wmax - 1)
    return [compare_row(verified[w][i], ref[i], prompt_id=item_id, position=p, width=w, row=i, token=ids[p + i])
            for w in widths for i in range(w)]


def run(config: MarginsConfig, target: Any, *, say: Callable[[str], None] = say_stderr,
        stop: StopSignals | None = None) -> Path:
    """Probe; returns the path of report.json (results.verdict: pass, fail, or incomplete when
    interrupted without a counted flip)."""
    from ds4kit.bench.progress import RepProgress
    from ds4kit.probes.margins.output import RowsCsv, plot_histogram, summary_md

    config.check()
    suite = load_suite(config.suite)
    widths = sorted(set(config.widths))
    wmax = max(widths)
    with stop_signals(stop) as stop, start_run(KIND, config.out, command=config.command) as run:
        load_target(run, target)
        gaps = target.capabilities.missing({"logits": "full logits of every verify and decode row",
                                            "rewind": "a return to the position before each verify"})
        if gaps:
            raise ValueError(f"{target.kind} target cannot run probe margins: no "
                             + "; no ".join(g["what"] for g in gaps))

        plan = []
        for item in suite.items:
            ids = _prompt_ids(target, item)
            positions = _probe_positions(len(ids), wmax, config.positions)
            if not positions:
                raise ValueError(f"{suite.path}: prompt {item.id!r} has {len(ids)} tokens, fewer than the widest "
                                 f"verify ({wmax})")
            if len(positions) < config.positions:
                run.warn("few-positions", f"prompt {item.id!r}: {len(ids)} tokens leave room for {len(positions)} "
                         f"of the {config.positions} positions asked for at width {wmax}")
            plan.append((item, ids, positions))
        say(f"probe margins on {target.kind}: {sum(len(p) for _, _, p in plan)} positions x widths {widths} "
            f"({sum(widths)} verify rows per position), tolerance {config.tolerance:g}")

        rows: list[RowResult] = []
        done = 0
        csv_out = RowsCsv(run.add_file("rows", "rows.csv"), config.tolerance)
        tel = RunTelemetry(run, config.thermal, stop, say)
        try:
            with tel, RepProgress(sum(len(p) for _, _, p in plan), enabled=config.progress) as bar:
                for item, ids, positions in plan:
                    if stop.requested:
                        break
                    session = target.session(max_ctx=len(ids))
                    if positions[0] > 0:
                        session.prefill(ids[:positions[0]], mode="exact")
                    for p in positions:
                        if stop.requested:
                            break
                        found = _probe_position(session, ids, p, widths, item.id)
                        csv_out.write(found)
                        rows.extend(found)
                        done += 1
                        tel.progress(done)  # positions probed: the soak rate is positions per second
                        bar.step(f"{item.id} position {p}")
        finally:
            csv_out.close()

        complete = not stop.requested
        summary = summarize(rows, widths, config.tolerance)
        results = {
            "verdict": verdict(summary, complete),
            "rule": RULE,
            "tolerance": float(config.tolerance),
            "reference": "one-token decode from the same state (rewind between verify and decode)",
            "target_kind": target.kind,
            "target_claims_bitwise_verify": target.capabilities.verify,
            "widths": widths,
            "positions_per_prompt": config.positions,
            "positions_compared": done,
            "suite": {"name": suite.name, "path": str(suite.path), "items": [
                {"id": item.id, "tokens": len(ids), "positions": [positions[0], positions[-1]]}
                for item, ids, positions in plan]},
            **summary,
            "telemetry": tel.results(),
        }
        results["statement"] = (
            f"every one of the {summary['rows']} verify rows is bitwise equal to one-token decode "
            "(max |dlogit| = 0 at every width)" if summary["all_rows_bitwise_equal"] else
            f"{summary['rows'] - summary['bitwise_equal_rows']} of {summary['rows']} verify rows differ from "
            f"one-token decode (max |dlogit| {summary['max_abs_dlogit']:.6g}); {summary['flips']} argmax flips "
            f"({summary['counted_flips']} at a margin above the tolerance) at {summary['flipped_positions']} "
            "distinct prompt positions")
        if rows:
            plot_histogram(run.add_file("histogram", "histogram.png"), rows, widths, config.tolerance,
                           f"probe margins, {target.kind}: |dlogit| of {len(rows)} verify rows vs one-token decode")
        say(f"{results['verdict']}: {results['statement']}")
        interrupted = stop.requested
        run.finish(results, status="interrupted" if interrupted else "ok", summary_md=summary_md(results),
                   interrupt=stop.record() if interrupted else None)
    return run.folder / "report.json"
