"""Small pieces every job uses: the stop signals, recording its target, saying progress."""
from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Any, ContextManager

from ds4kit.interrupts import StopSignals


def say_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def stop_signals(stop: StopSignals | None) -> ContextManager[StopSignals]:
    """The caller's StopSignals (already installed), or a fresh one installed for the job."""
    return nullcontext(stop) if stop is not None else StopSignals()


def load_target(run: Any, target: Any, meaning: str | None = None) -> None:
    """Record the target, warn when it is a built-in synthetic model (random weights: `meaning`
    says what that does to this job's results), load it inside the run (so a failure is in the
    report) and record what it resolved to."""
    run.set_target(target.describe())
    if target.synthetic_model:
        run.warn("demo-model", f"ran on the built-in synthetic {target.synthetic_model} model (random weights)"
                 + (f": {meaning}" if meaning else ""))
    target.load()
    record_loaded_target(run, target)


def record_loaded_target(run: Any, target: Any) -> None:
    """After target.load(): what it resolved to (backend, threads) and the model it runs."""
    run.set_target(target.describe())
    run.set_model(target.manifest_entry())
