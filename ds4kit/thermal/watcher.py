"""Run a command under thermal watch: cool down first, sample while it runs, warn, and stop
it cleanly (SIGINT, then SIGTERM, then SIGKILL) when a temperature stays too high.

The child gets its own process group so a signal reaches everything it started; Ctrl-C
on the watcher is forwarded to that group (first SIGINT, then SIGTERM, then SIGKILL).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ds4kit.interrupts import StopSignals, own_process_group
from ds4kit.thermal.sampler import Sampler, Ticker
from ds4kit.thermal.stats import watched_temperature
from ds4kit.thermal.thresholds import ThresholdMonitor

EXIT_THERMAL_ABORT = 3
EXIT_COOLDOWN_TIMEOUT = 4
EXIT_NOT_STARTED = 5


@dataclass
class WatchConfig:
    interval: float = 1.0
    warn_at: float | None = None
    abort_at: float | None = None
    abort_after: float = 3.0
    grace: float = 10.0
    cooldown_until: float | None = None
    cooldown_timeout: float = 1800.0
    duration: float | None = None
    temp_patterns: tuple[str, ...] = ("*",)
    warn_every: float = 60.0

    def check(self) -> None:
        if self.interval <= 0:
            raise ValueError(f"--interval must be positive, got {self.interval:g}")
        if self.warn_at is not None and self.abort_at is not None and self.warn_at > self.abort_at:
            raise ValueError(f"--warn-at {self.warn_at} is above --abort-at {self.abort_at}")
        for name in ("abort_after", "grace", "cooldown_timeout"):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name.replace('_', '-')} must not be negative")
        if self.duration is not None and self.duration <= 0:
            raise ValueError("--duration must be positive")


@dataclass
class WatchOutcome:
    exit_code: int = 0
    status: str = "ok"
    end_reason: str = ""
    abort: dict[str, Any] | None = None
    cooldown: dict[str, Any] | None = None
    child: dict[str, Any] | None = None
    warnings: list[tuple[str, str]] = field(default_factory=list)
    warn_messages: int = 0
    interrupts: int = 0


class Watcher:
    def __init__(self, config: WatchConfig, sampler: Sampler, *, say: Callable[[str], None] | None = None,
                 on_sample: Callable[[dict, "Watcher"], None] | None = None, child_stdout=None):
        config.check()
        self.c = config
        self.sampler = sampler
        self.say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.on_sample = on_sample
        self.child_stdout = child_stdout
        self.proc: subprocess.Popen | None = None
        self.out = WatchOutcome()
        self._events: list[str] = []
        self._interrupts = 0
        self._handled_interrupts = 0
        self.monitor = ThresholdMonitor(warn_at=config.warn_at, abort_at=config.abort_at,
                                        abort_after=config.abort_after, warn_every=config.warn_every)
        self._aborting_at: float | None = None
        self._signals_sent: list[str] = []
        self.stop = StopSignals(on_signal=self._on_signal, hard_stop=False)
        self.last_temp: tuple[float | None, str | None] = (None, None)

    # -- signals ------------------------------------------------------------
    def _on_signal(self, signum: int) -> None:
        # Counted, not acted on here: the sampling loop forwards each one to the child in turn.
        self._interrupts += 1
        self._events.append(f"received {signal.Signals(signum).name}")

    # -- one sample ---------------------------------------------------------
    def _sample(self, phase: str) -> dict:
        rec = self.sampler.sample(phase, self._events)
        self._events = []
        self.last_temp = watched_temperature(rec["values"], self.c.temp_patterns)
        if self.on_sample:
            self.on_sample(rec, self)
        return rec

    def _check_thresholds(self, rec: dict) -> bool:
        """Warn as needed; True when the abort condition has just been met."""
        if self._aborting_at is not None:
            return False
        temp, key = self.last_temp
        v = self.monitor.check(rec["t"], temp, key)
        if v.warning:
            self.say(v.warning)
            self.out.warn_messages += 1
        self._events.extend(v.events)
        if v.abort is not None:
            self.out.abort = {**v.abort, "signals": [], "child_stopped_by": None}
            return True
        return False

    # -- the child ----------------------------------------------------------
    def _signal_child(self, sig: signal.Signals, why: str) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            self.proc.send_signal(sig)
        entry = {"signal": sig.name, "t": round(time.monotonic() - self.sampler.t0, 3), "why": why}
        self._signals_sent.append(sig.name)
        if self.out.abort is not None:
            self.out.abort["signals"].append(entry)
        self._events.append(f"sent {sig.name} to child ({why})")
        self.say(f"ds4kit thermal: sending {sig.name} to the child ({why})")

    def _escalate(self, now: float) -> None:
        # After the first signal: SIGTERM after one grace period, SIGKILL after another.
        if self._aborting_at is None or self.proc is None or self.proc.poll() is not None:
            return
        waited = now - self._aborting_at
        if waited >= 2 * self.c.grace and "SIGKILL" not in self._signals_sent:
            self._signal_child(signal.SIGKILL, f"still running {waited:.1f} s after SIGINT")
        elif waited >= self.c.grace and "SIGTERM" not in self._signals_sent:
            self._signal_child(signal.SIGTERM, f"still running {waited:.1f} s after SIGINT")

    def _forward_interrupts(self, now: float) -> None:
        while self._handled_interrupts < self._interrupts:
            self._handled_interrupts += 1
            n = self._handled_interrupts
            self.out.interrupts = n
            if self.proc is None:
                continue
            sig = signal.SIGINT if n == 1 else signal.SIGTERM if n == 2 else signal.SIGKILL
            if sig.name not in self._signals_sent:
                self._signal_child(sig, f"user interrupt #{n}")
            if self._aborting_at is None:
                self._aborting_at = time.monotonic()

    def _spawn(self, argv: list[str]) -> None:
        kwargs: dict[str, Any] = own_process_group()
        if self.child_stdout is not None:
            kwargs["stdout"] = self.child_stdout
            kwargs["stderr"] = subprocess.STDOUT
        self.proc = subprocess.Popen(argv, **kwargs)
        self.out.child = {"argv": list(argv), "pid": self.proc.pid, "exit_code": None, "signal": None,
                          "started_t": round(time.monotonic() - self.sampler.t0, 3)}
        self._events.append(f"child started pid={self.proc.pid}")

    # -- phases -------------------------------------------------------------
    def _cooldown(self, ticker: Ticker) -> bool:
        """Wait until the watched temperature is below --cooldown-until. False if we must stop."""
        target = self.c.cooldown_until
        start = time.monotonic()
        first: float | None = None
        n = 0
        while True:
            self._sample("cooldown")
            n += 1
            temp, key = self.last_temp
            if temp is None:
                self.out.warnings.append(("cooldown-no-temperature",
                                          "--cooldown-until given but no temperature sensor matched; started without waiting"))
                self.out.cooldown = {"target_c": target, "reached": False, "waited_s": 0.0, "samples": n,
                                     "note": "no temperature reading"}
                return True
            first = temp if first is None else first
            waited = round(time.monotonic() - start, 3)
            if temp < target:
                self.out.cooldown = {"target_c": target, "reached": True, "waited_s": waited, "samples": n,
                                     "start_c": first, "end_c": temp, "metric": key}
                if n > 1:
                    self.say(f"ds4kit thermal: cooled to {temp:g} C (< {target:g} C) after {waited:.1f} s")
                return True
            if n == 1:
                self.say(f"ds4kit thermal: {key} = {temp:g} C, waiting until below {target:g} C before starting")
            if self._interrupts:
                self.out.cooldown = {"target_c": target, "reached": False, "waited_s": waited, "samples": n,
                                     "start_c": first, "end_c": temp, "metric": key, "note": "interrupted"}
                self.out.status, self.out.exit_code = "interrupted", self.stop.exit_code
                self.out.end_reason = "interrupted during cooldown; the command was not started"
                return False
            if waited >= self.c.cooldown_timeout:
                self.out.cooldown = {"target_c": target, "reached": False, "waited_s": waited, "samples": n,
                                     "start_c": first, "end_c": temp, "metric": key, "note": "timed out"}
                self.out.status, self.out.exit_code = "failed", EXIT_COOLDOWN_TIMEOUT
                self.out.end_reason = (f"{key} still {temp:g} C after --cooldown-timeout {self.c.cooldown_timeout:g} s; "
                                       "the command was not started")
                return False
            time.sleep(ticker.delay())

    def run(self, argv: list[str] | None) -> WatchOutcome:
        try:
            with self.stop:
                return self._run(argv)
        finally:
            if self.proc is not None and self.proc.poll() is None:
                # Only reached if the watcher itself failed: never leave the child running unwatched.
                self._signal_child(signal.SIGKILL, "watcher failed")
                self.proc.wait()

    def _run(self, argv: list[str] | None) -> WatchOutcome:
        ticker = Ticker(self.c.interval)
        if self.c.cooldown_until is not None and not self._cooldown(ticker):
            return self.out
        if argv:
            try:
                self._spawn(argv)
            except OSError as exc:
                self.out.status, self.out.exit_code = "failed", EXIT_NOT_STARTED
                self.out.end_reason = f"could not start {argv[0]!r}: {exc.strerror or exc}"
                self.out.child = {"argv": list(argv), "pid": None, "exit_code": None, "signal": None,
                                  "error": str(exc)}
                return self.out
            if self.c.duration is not None:
                self.out.warnings.append(("duration-ignored", "--duration is ignored when a command is given; "
                                          "the watch lasts as long as the command"))
        phase = "run" if argv else "watch"
        t_start = time.monotonic()
        temp_seen = False
        while True:
            rec = self._sample(phase)
            temp_seen = temp_seen or self.last_temp[0] is not None
            now = time.monotonic()
            if self._check_thresholds(rec):
                self.say(f"ds4kit thermal ABORT: {self.out.abort['reason']}")
                if self.proc is None:
                    self.out.end_reason = "thermal abort"
                    break
                self._signal_child(signal.SIGINT, "thermal abort")
                self._aborting_at = time.monotonic()  # the grace period counts from the signal itself
            self._forward_interrupts(now)
            self._escalate(now)
            if self.proc is not None:
                if self.proc.poll() is not None:
                    break
            elif self._interrupts:
                self.out.end_reason = "stopped by the user"
                break
            elif self.c.duration is not None and now - t_start >= self.c.duration:
                self.out.end_reason = f"--duration {self.c.duration:g} s reached"
                break
            delay = ticker.delay()
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=delay)
                except subprocess.TimeoutExpired:
                    pass
            else:
                time.sleep(delay)
        if not temp_seen and (self.c.warn_at is not None or self.c.abort_at is not None):
            self.out.warnings.append(("no-temperature", "--warn-at/--abort-at were set but no temperature sensor "
                                      "matched; nothing was protected"))
        self._finish_outcome()
        return self.out

    def _finish_outcome(self) -> None:
        o = self.out
        if self.proc is not None:
            rc = self.proc.returncode
            o.child["exit_code"] = rc
            if rc is not None and rc < 0:
                o.child["signal"] = signal.Signals(-rc).name
            o.child["ended_t"] = round(time.monotonic() - self.sampler.t0, 3)
            child_code = 128 - rc if rc is not None and rc < 0 else rc
            if o.abort is not None:
                o.abort["child_stopped_by"] = o.abort["signals"][-1]["signal"] if o.abort["signals"] else None
                o.abort["child_exit_code"] = rc
                o.status, o.exit_code = "aborted", EXIT_THERMAL_ABORT
                o.end_reason = "thermal abort: " + o.abort["reason"]
            elif o.interrupts:
                # The child's own exit code when it has one (it chose how to stop), else 128 + our signal.
                o.status, o.exit_code = "interrupted", child_code or self.stop.exit_code
                o.end_reason = "interrupted by the user"
            else:
                o.exit_code = child_code
                o.status = "ok" if child_code == 0 else "failed"
                o.end_reason = f"command exited with {rc}" + (f" ({o.child['signal']})" if o.child["signal"] else "")
        elif o.abort is not None:
            o.status, o.exit_code = "aborted", EXIT_THERMAL_ABORT
            o.end_reason = "thermal abort: " + o.abort["reason"]
