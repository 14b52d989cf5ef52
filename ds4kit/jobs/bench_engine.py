"""The `bench engine` job: prefill and decode tok/s of the ds4kit engine versus llama.cpp on one
GGUF (the measurement itself lives in ds4kit.bench.engine_bench).

    report = bench_engine.run(BenchEngineConfig(pp=(64,), tg=(32,)), build_target(TargetOptions(...)))

The target's backend and numerics apply to the ds4kit side; llama.cpp (CPU build) has neither
D rounding, which the report says (results.numerics). Interrupted, the job keeps every
repetition that finished (reps.jsonl, results.csv, report with status "interrupted").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ds4kit.bench.engine_runners import ENGINES
from ds4kit.errors import ConfigError
from ds4kit.interrupts import StopSignals
from ds4kit.jobs.common import say_stderr, stop_signals
from ds4kit.jobs.telemetry import ThermalOptions
from ds4kit.reports.run import check_run_folder


@dataclass
class BenchEngineConfig:
    pp: tuple[int, ...] = (64, 256)
    tg: tuple[int, ...] = (32,)
    depths: tuple[int, ...] = (0,)  # context depths (llama-bench's -d); 0: a fresh sequence
    reps: int = 3
    delay_s: float = 0.0
    engines: tuple[str, ...] = ENGINES
    prefill_mode: str = "batched"
    n_batch: int = 512
    llama_gpu_layers: int | None = None  # None: all when the ds4kit backend is cuda/hip, else 0
    seed: int = 0
    probe_mb: float | None = None
    progress: bool = True
    out: Path | None = None
    command: list[str] | None = field(default=None, repr=False)
    thermal: ThermalOptions = field(default_factory=ThermalOptions)  # --thermal and its thresholds

    def check(self) -> None:
        if not self.pp and not self.tg:
            raise ConfigError("nothing to run: give at least one -p or -n size")
        for option, sizes in (("-p", self.pp), ("-n", self.tg)):
            bad = [n for n in sizes if not isinstance(n, int) or n < 1]
            if bad:
                raise ConfigError(f"sizes must be at least 1, got {bad[0]!r}", option)
        bad = [d for d in self.depths if not isinstance(d, int) or d < 0]
        if bad or not self.depths:
            raise ConfigError(f"depths must be integers >= 0, got {bad[0] if bad else 'none'!r}", "-d")
        if not isinstance(self.reps, int) or self.reps < 1:
            raise ConfigError(f"must be at least 1, got {self.reps!r}", "-r")
        if self.delay_s < 0:
            raise ConfigError(f"must be >= 0, got {self.delay_s}", "--delay")
        unknown = [e for e in self.engines if e not in ENGINES]
        if unknown or not self.engines:
            raise ConfigError(f"unknown engine(s) {unknown or list(self.engines)}; choose from {', '.join(ENGINES)}",
                              "--engines")
        if self.prefill_mode not in ("batched", "exact"):
            raise ConfigError(f"must be batched or exact, got {self.prefill_mode!r}", "--prefill")
        if self.n_batch < 1:
            raise ConfigError(f"must be at least 1, got {self.n_batch}", "--n-batch")
        check_run_folder(self.out)


def run(config: BenchEngineConfig, target: Any, *, say: Callable[[str], None] = say_stderr,
        stop: StopSignals | None = None) -> Path:
    """Benchmark; returns the path of report.json."""
    from ds4kit.bench.engine_bench import run_engine_bench

    config.check()
    if getattr(target, "kind", None) != "embedded":
        raise ConfigError(f"bench engine measures the embedded engine; a {getattr(target, 'kind', '?')} target "
                          "cannot be benchmarked here")
    with stop_signals(stop) as stop:
        folder = run_engine_bench(config, target, say=say, stop=stop)
    return folder / "report.json"
