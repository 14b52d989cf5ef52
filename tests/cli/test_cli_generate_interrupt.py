"""Ctrl-C / SIGTERM during `ds4kit generate`, for real: a child process on the tiny model is
signalled once tokens have streamed; what it streamed must be exactly what its report and
tokens.csv keep, and it must exit 128 + the signal."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ds4kit.reports.schema import validate_report

REPO = Path(__file__).resolve().parents[2]
MAX_TOKENS = 50_000  # far more than can stream before the signal: only the signal can end the run


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def _read_at_least(fd: int, n: int, timeout_s: float = 120.0) -> bytes:
    import select
    import time

    buf = b""
    end = time.monotonic() + timeout_s
    while len(buf) < n:
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError(f"only {len(buf)} bytes streamed in {timeout_s} s")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError(f"the child closed stdout after {len(buf)} bytes")
            buf += chunk
    return buf


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_keeps_every_streamed_token(tiny_target, tmp_path, sig):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ds4kit", "generate", "-m", str(tiny_target), "-p", "Tell me a long story.",
         "--max-tokens", str(MAX_TOKENS), "--max-ctx", str(MAX_TOKENS + 64), "--logprobs", "2", "--threads", "1",
         "--out", str(out)],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = _read_at_least(proc.stdout.fileno(), 200)
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = err.decode("utf-8", "replace")
    assert proc.returncode == 128 + sig, err

    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    validate_report(rep)
    assert rep["status"] == "interrupted" and rep["error"] is None, rep["error"]
    assert rep["interrupt"]["signal"] == sig.name and rep["interrupt"]["exit_code"] == 128 + sig
    r = rep["results"]
    assert r["stop"]["reason"] == "interrupted"
    ids = r["output"]["ids"]
    assert 0 < len(ids) < MAX_TOKENS and r["output"]["n_tokens"] == len(ids)

    # What streamed is the report's text (the command ends the stream with one newline).
    streamed = (first + rest).decode("utf-8")
    assert streamed == r["output"]["text"] + "\n"
    assert len(r["output"]["text"].encode("utf-8")) >= 200

    with open(out / "tokens.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [int(row["token"]) for row in rows] == ids
    assert all(float(row["elapsed_s"]) > 0 and row["logprob"] != "" for row in rows)
    lp = [json.loads(line) for line in (out / "logprobs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["token"] for row in lp] == ids
    assert r["timings"]["decode_s"] > 0 and r["timings"]["prefill_s"] > 0
    assert "interrupted" in (out / "summary.md").read_text(encoding="utf-8")
