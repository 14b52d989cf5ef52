"""Child process of `ds4kit bench engine`: one engine, JSON lines back to the parent.

    python -m ds4kit.bench.engine_worker SPEC.json

After loading and one warm-up it waits for commands on stdin, one JSON per line:
    {"cmd": "run", "test": "pp64", "rep": 0}     one timed repetition
    {"cmd": "quit"}                              report peak RSS and exit
so the parent can alternate the engines repetition by repetition (on a shared machine both
then see the same background load).

The parent starts it in its own process group, so a Ctrl-C at the terminal reaches only the
parent, which finishes the repetition under way and then sends "quit" (ds4kit.interrupts).

Running each engine in its own process makes peak RSS (ru_maxrss) a per-engine number; only
one process works at a time, the other waits on its stdin. The protocol goes over the original
stdout; everything else printed (ours or C code writing to fd 1) is redirected to stderr,
which the parent keeps as a log file. Events, one JSON per line:
    {"event": "unavailable", "reason": ...}               the engine cannot be imported
    {"event": "loaded", "load_s": ..., "rss_after_load_kib": ..., "info": {...}}  (after warm-up)
    {"event": "rep", "test": "pp64", "rep": 0, "seconds": ..., "n_tokens": 64, "loadavg": [...]}
    {"event": "done", "peak_rss_kib": ...}
    {"event": "error", "type": ..., "message": ...}
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any, Callable, Iterator, TextIO


def _rss_kib() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux


def _loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def run_rep(runner: Any, test: dict[str, Any], depth_tokens: dict[str, list[int]] | None = None) -> dict[str, Any]:
    """One repetition: {"seconds", "n_tokens"} (and, for a gen test, the tokens' sha256 and the
    speculation's acceptance). Sequence setup, the context and the tg start token are untimed."""
    depth = int(test["depth"])
    speculative = bool(test.get("speculative"))
    if depth:
        runner.at_depth(depth, (depth_tokens or {})[str(depth)], speculative)
    else:
        runner.new_sequence(speculative)
    if test["kind"] == "gen":  # greedy generation, DSpark on or off (ds4kit only)
        return runner.generate(test["start_token"], test["n"], speculative)
    return {"seconds": _timed(runner, test), "n_tokens": len(test["tokens"])}


def _timed(runner: Any, test: dict[str, Any]) -> float:
    if test["kind"] == "pp":
        tokens = test["tokens"]
        t0 = time.perf_counter()
        runner.prefill(tokens)
        return time.perf_counter() - t0
    runner.decode(test["start_token"])
    t0 = time.perf_counter()
    for tok in test["tokens"]:
        runner.decode(tok)
    return time.perf_counter() - t0


def warm_up(runner: Any, spec: dict[str, Any]) -> None:
    # One short prefill and a few decodes: page in the weights, start thread pools, size buffers.
    w = spec["warmup_tokens"]
    runner.new_sequence()
    runner.prefill(w)
    for tok in w[:2]:
        runner.decode(tok)


def work(spec: dict[str, Any], emit: Callable[[dict[str, Any]], None], commands: Iterator[str]) -> None:
    """Load, warm up, then run one repetition per command until "quit" (the parent interleaves engines)."""
    from ds4kit.bench.engine_runners import LlamaCppUnavailable, make_runner

    t0 = time.perf_counter()
    try:
        runner = make_runner(spec["engine"], spec)
    except LlamaCppUnavailable as exc:
        emit({"event": "unavailable", "reason": str(exc)})
        return
    load_s = time.perf_counter() - t0
    rss_after_load = _rss_kib()
    warm_up(runner, spec)
    emit({"event": "loaded", "load_s": load_s, "rss_after_load_kib": rss_after_load, "info": runner.info()})
    tests = {t["name"]: t for t in spec["tests"]}
    for line in commands:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        test = tests[cmd["test"]]
        rep = run_rep(runner, test, spec.get("depth_tokens"))
        emit({"event": "rep", "test": test["name"], "rep": cmd["rep"], **rep, "loadavg": _loadavg(),
              "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "t_end": time.time()})
    emit({"event": "done", "peak_rss_kib": _rss_kib()})


def _protocol_stream() -> TextIO:
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # anything else written to stdout (C libraries included) lands in the log
    sys.stdout = sys.stderr
    return proto


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m ds4kit.bench.engine_worker SPEC.json", file=sys.stderr)
        return 2
    proto = _protocol_stream()

    def emit(event: dict[str, Any]) -> None:
        proto.write(json.dumps(event) + "\n")
        proto.flush()

    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    try:
        work(spec, emit, iter(sys.stdin.readline, ""))
    except Exception as exc:  # reported to the parent, which records it in the report
        emit({"event": "error", "type": type(exc).__name__, "message": str(exc) or repr(exc)})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
