"""Ctrl-C and SIGTERM as a request to stop, not a crash: the one place for signal logic.

    with StopSignals() as stop:
        while work_left and not stop.requested:
            ...                                   # finish the current step, keep what it made
        if stop.requested:
            run.finish(results, status="interrupted", interrupt=stop.record())

The first SIGINT or SIGTERM only sets a flag, so the job finishes its current step (a token,
a repetition, a sample) and writes its report with what it has. A second signal raises
`Interrupted` (a KeyboardInterrupt) for a user who does not want to wait; the run's report
still records status "interrupted". The process then exits 128 + the first signal's number
(130 for SIGINT, 143 for SIGTERM), the shell convention.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any, Callable

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_code_for(signum: int) -> int:
    return 128 + int(signum)


class Interrupted(KeyboardInterrupt):
    """Raised by a second stop signal; carries the first one's exit code."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = int(signum)

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.signum)


def interrupt_record(exc: KeyboardInterrupt) -> dict[str, Any]:
    """The report's `interrupt` entry for a run stopped by an exception (a second signal, or
    Python's own KeyboardInterrupt where no StopSignals was installed)."""
    signum = exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)
    return {"signal": signal.Signals(signum).name, "exit_code": exit_code_for(signum),
            "signals_received": 2 if isinstance(exc, Interrupted) else 1,
            "received_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


class StopSignals:
    """Installs SIGINT/SIGTERM handlers that record the request (main thread only).

    on_signal(signum) is called for every signal received. hard_stop: whether a second signal
    raises Interrupted (a watcher that escalates to its child sets it False and counts)."""

    def __init__(self, *, on_signal: Callable[[int], None] | None = None, hard_stop: bool = True):
        self._on_signal = on_signal
        self._hard_stop = hard_stop
        self._old: dict[int, Any] = {}
        self.signums: list[int] = []
        self._t: float | None = None
        self._request: dict[str, Any] | None = None  # a stop asked for by the program itself

    # -- the request ----------------------------------------------------------
    @property
    def requested(self) -> bool:
        return bool(self.signums) or self._request is not None

    def request(self, cause: str, reason: str, exit_code: int) -> None:
        """Ask the job to stop as a signal would, for another cause (a thermal abort): it
        finishes the current step and keeps what it made; the report's `interrupt` names the
        cause and the process exits with `exit_code`. Safe from another thread (one assignment)."""
        if self._request is None:
            self._request = {"cause": cause, "reason": reason, "exit_code": int(exit_code),
                             "received_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    def __call__(self) -> bool:
        """`stop` itself is the should_stop callback loops take."""
        return self.requested

    @property
    def signal_name(self) -> str | None:
        if not self.signums:
            return self._request["cause"] if self._request is not None else None
        return signal.Signals(self.signums[0]).name

    @property
    def exit_code(self) -> int | None:
        if not self.signums:
            return self._request["exit_code"] if self._request is not None else None
        return exit_code_for(self.signums[0])

    def record(self) -> dict[str, Any] | None:
        """The report's `interrupt` entry (reports/schema/common.json), or None without a stop."""
        if not self.signums:
            return dict(self._request) if self._request is not None else None
        return {"signal": self.signal_name, "exit_code": self.exit_code, "signals_received": len(self.signums),
                "received_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._t))}

    # -- handlers -------------------------------------------------------------
    def _handle(self, signum, frame) -> None:
        self.signums.append(int(signum))
        if self._t is None:
            self._t = time.time()
        if self._on_signal is not None:
            self._on_signal(int(signum))
        # No printing here: a handler runs between any two bytecodes, also inside a write to stderr.
        if self._hard_stop and len(self.signums) > 1:
            raise Interrupted(self.signums[0])

    def __enter__(self) -> "StopSignals":
        for sig in STOP_SIGNALS:
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread: whoever owns it handles signals
                pass
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}


def own_process_group() -> dict[str, Any]:
    """Popen keyword arguments that start a child in its own process group, so a Ctrl-C at the
    terminal reaches only us and we decide what the child gets (and when)."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}
