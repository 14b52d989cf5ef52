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


def record_loaded_target(run: Any, target: Any) -> None:
    """After target.load(): what it resolved to (backend, threads) and the model it runs."""
    run.set_target(target.describe())
    run.set_model(target.manifest_entry())
