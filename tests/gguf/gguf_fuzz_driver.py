"""Runs gguf_fuzz_child.py over a range of mutation indices, restarting after a
crash or hang so that every failing index is pinpointed, not just the first."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

CHILD = Path(__file__).resolve().parent / "gguf_fuzz_child.py"


@dataclass
class FuzzResult:
    cases: int = 0
    accepted: int = 0
    rejected: int = 0
    crashes: list[tuple[int, int]] = field(default_factory=list)   # (index, return code / signal)
    hangs: list[int] = field(default_factory=list)
    bad_exceptions: list[str] = field(default_factory=list)
    restarts: int = 0


def _progress(path: Path) -> tuple[int, int, int]:
    """(index of the case running or next, accepted so far, rejected so far)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return -1, 0, 0
    return struct.unpack("<qqq", raw[:24]) if len(raw) >= 24 else (-1, 0, 0)


def run_fuzz(seed_dir: Path, work_dir: Path, n_cases: int, hang_s: float = 10.0,
             env_extra: dict[str, str] | None = None) -> FuzzResult:
    res = FuzzResult()
    work_dir.mkdir(parents=True, exist_ok=True)
    progress, log = work_dir / "progress.bin", work_dir / "child.log"
    env = dict(os.environ, **(env_extra or {}))
    start = 0
    while start < n_cases:
        progress.unlink(missing_ok=True)
        with open(log, "w") as out:
            proc = subprocess.Popen([sys.executable, str(CHILD), str(seed_dir), str(work_dir / "case.gguf"),
                                     str(progress), str(start), str(n_cases)],
                                    stdout=out, stderr=subprocess.STDOUT, env=env)
            last, last_change = -2, time.monotonic()
            while proc.poll() is None:
                time.sleep(0.05)
                now = _progress(progress)[0]
                if now != last:
                    last, last_change = now, time.monotonic()
                elif time.monotonic() - last_change > hang_s:
                    proc.kill()
                    proc.wait()
                    break
        text = log.read_text(errors="replace")
        res.bad_exceptions.extend(line for line in text.splitlines() if line.startswith("BADEXC "))
        where, ok, rejected = _progress(progress)
        res.accepted += ok
        res.rejected += rejected
        if proc.returncode in (0, 1) and where == n_cases:
            res.cases += n_cases - start
            break
        # Died (signal, abort, sanitizer) or hung at case `where`: count the cases
        # before it as parsed, note it, and carry on after it.
        if where < start:  # died before its first case: a broken setup, not a finding
            raise RuntimeError(f"fuzz child failed to start (exit {proc.returncode}):\n{text[-2000:]}")
        res.restarts += 1
        res.cases += where - start + 1
        if proc.returncode == -9 and time.monotonic() - last_change > hang_s:
            res.hangs.append(where)
        else:
            res.crashes.append((where, proc.returncode))
            res.bad_exceptions.extend(l for l in text.splitlines()[-5:] if l and not l.startswith("BADEXC"))
        start = where + 1
    return res
