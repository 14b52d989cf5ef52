"""`ds4kit bench engine`: our engine against llama.cpp's CPU build on the same GGUF, in one run.

Conventions follow llama-bench: `pp N` prefills N tokens into a fresh sequence, `tg N` decodes
N tokens one at a time (after one untimed start token); each test repeats `reps` times and
reports mean and standard deviation of tok/s. Both engines get the same fixed pseudo-random
tokens and the same thread count, each in its own child process (ds4kit.bench.engine_worker)
so peak RSS is per engine; both stay loaded and the parent alternates them repetition by
repetition (A B, B A, ...), so a busy machine's background load hits both alike. The
hardware limits (ds4kit.bench.hw_limits) are measured in the same run, and every result is
also quoted as a fraction of them:

    decode fraction  = tok/s x weight bytes read per decoded token / memory bandwidth
    prefill fraction = tok/s x 2 x matmul parameters per prompt token / float32 matmul FLOP/s
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from ds4kit.bench.engine_runners import ENGINES
from ds4kit.interrupts import own_process_group
from ds4kit.reports import start_run
from ds4kit.engine.model import usable_cpus

FRACTION_DEFINITIONS = {
    "decode": ("tok/s x weight bytes one decoded token reads (ModelFile.bytes_per_decoded_token: dense tensors "
               "whole, routed experts scaled by expert_used_count/expert_count, one embedding row; KV reads "
               "not counted) / measured memory bandwidth (best of STREAM-like copy and add)"),
    "prefill": ("tok/s x 2 x matmul parameters per prompt token (every 2-D weight except the token embedding "
                "and the output head, routed experts scaled by expert_used_count/expert_count; attention "
                "score FLOPs not counted) / measured float32 matmul FLOP/s (numpy BLAS, same thread count)"),
}

# On a GPU backend the limits are the device's: its memory bandwidth measured by the engine's
# kernels, and its bf16 matrix peak as its datasheet states it (ds4kit.bench.gpu_peaks).
DEVICE_FRACTION_DEFINITIONS = {
    "decode": FRACTION_DEFINITIONS["decode"].split(" / ")[0] + (
        " / the GPU's memory bandwidth measured in this run (best of a read and a copy kernel over arrays of 1 GiB "
        "or more, the engine's device_limits)"),
    "prefill": FRACTION_DEFINITIONS["prefill"].split(" / ")[0] + (
        " / the GPU's dense bf16 matrix peak as its datasheet states it (ds4kit.bench.gpu_peaks; not measured: no "
        "vendor BLAS is linked)"),
}

_TOKEN_LOW = 100          # skip the first ids (byte tokens) ...
_TOKEN_HIGH = 100_000     # ... and the added/special tokens at the top of the real vocabulary
# Pause when switching engines: lets the idle engine's threads stop spinning (OpenMP waits busy
# for a while after each parallel region) before the other engine's timer starts.
_SWITCH_PAUSE_S = 0.05


def _parse_ints(text: str, option: str, least: int, example: str) -> list[int]:
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            n = int(part)
        except ValueError:
            raise ValueError(f"{option}: {part!r} is not an integer (give a comma list like {example})") from None
        if n < least:
            raise ValueError(f"{option}: {'sizes must be at least 1' if least else 'depths must be >= 0'}, got {n}")
        values.append(n)
    return values


def parse_sizes(text: str, option: str) -> list[int]:
    """'64,256' -> [64, 256]; every size a positive integer."""
    return _parse_ints(text, option, 1, "64,256")


def parse_depths(text: str) -> list[int]:
    """'0,2048' -> [0, 2048] (-d): each depth an integer >= 0, in the order given, no repeats."""
    depths = _parse_ints(text, "-d", 0, "0,2048")
    if not depths:
        raise ValueError("-d: give at least one depth (0 for a fresh sequence)")
    return list(dict.fromkeys(depths))


def parse_engines(text: str) -> list[str]:
    engines = [e.strip() for e in text.split(",") if e.strip()]
    bad = [e for e in engines if e not in ENGINES]
    if bad or not engines:
        raise ValueError(f"--engines: unknown engine(s) {bad or text!r}; choose from {', '.join(ENGINES)}")
    return list(dict.fromkeys(engines))


# -- model-derived work per token ---------------------------------------------
def model_work(model_path: Path) -> dict[str, Any]:
    from ds4kit.bench.model_work import matmul_params
    from ds4kit.engine.model_file import ModelFile

    mf = ModelFile(model_path)
    n_vocab = mf.tokenizer_summary()["vocab_size"] or mf.arch_key("vocab_size")
    return {
        "n_vocab": int(n_vocab),
        "decode_bytes_per_token": mf.bytes_per_decoded_token(),
        "prefill_params": matmul_params(mf),
        "n_params": sum(t.n_elements for t in mf.tensors),
        "size_bytes": mf.size_bytes,
        "architecture": mf.architecture,
        "name": mf.name,
        "manifest": mf.manifest_entry(),
    }


def make_tests(pp: list[int], tg: list[int], n_vocab: int, seed: int,
               depths: tuple[int, ...] = (0,)) -> list[dict[str, Any]]:
    """The pp and tg tests at each context depth (llama-bench's -d): depth 0 is a fresh
    sequence; at depth d the test runs after d tokens of context (depth_tokens), and its name
    gets "@d<d>". The tests' own tokens do not depend on the depths."""
    import numpy as np

    rng = np.random.default_rng(seed)
    high = max(_TOKEN_LOW + 1, min(n_vocab, _TOKEN_HIGH))
    low = min(_TOKEN_LOW, high - 1)
    base = []
    for n in pp:
        base.append({"name": f"pp{n}", "kind": "pp", "n": n, "tokens": rng.integers(low, high, n).tolist()})
    for n in tg:
        toks = rng.integers(low, high, n + 1).tolist()
        base.append({"name": f"tg{n}", "kind": "tg", "n": n, "start_token": toks[0], "tokens": toks[1:]})
    return [_at_depth(t, t["name"], d) for d in depths for t in base]


def _at_depth(test: dict[str, Any], base: str, depth: int, **fields: Any) -> dict[str, Any]:
    # `base` names the test at every depth (the frontier plot's panel); the name adds "@d<depth>".
    return dict(test, **fields, base=base, depth=depth, name=base + (f"@d{depth}" if depth else ""))


def generation_tests(tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """DSpark off and on (--drafter): for each tg test, `genN` (N greedy tokens, the model's own,
    after its start token) and `genN+dspark` (the same with the drafter); ds4kit only, since
    the speedup is ours against ourselves. An on test names its off twin (`off`)."""
    out = []
    for t in (t for t in tests if t["kind"] == "tg"):
        off = _at_depth(t, f"gen{t['n']}", t["depth"], kind="gen", speculative=False, engines=["ds4kit"])
        on = _at_depth(t, f"gen{t['n']}+dspark", t["depth"], kind="gen", speculative=True, engines=["ds4kit"],
                       off=off["name"])
        out += [off, on]
    return out


def depth_tokens(depths: tuple[int, ...], n_vocab: int, seed: int) -> dict[str, list[int]]:
    """The context each depth starts from: one prefix for all depths (each depth a longer cut
    of it), from its own seed stream."""
    import numpy as np

    most = max(depths, default=0)
    if most <= 0:
        return {}
    high = max(_TOKEN_LOW + 1, min(n_vocab, _TOKEN_HIGH))
    prefix = np.random.default_rng([seed, 0xD3]).integers(min(_TOKEN_LOW, high - 1), high, most).tolist()
    return {str(d): prefix[:d] for d in depths if d > 0}


# -- children -------------------------------------------------------------------
def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the same ds4kit the parent runs
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_hw_probe(threads: int, array_mb: float | None, device: str | None = None) -> dict[str, Any]:
    """The host's limits, plus the GPU's (device: cuda, hip or auto) in the child's "device"."""
    env = _child_env()
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    cmd = [sys.executable, "-m", "ds4kit.bench.hw_limits", str(threads)] + ([str(array_mb)] if array_mb else [])
    cmd += ["--device", device] if device else []
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, **own_process_group())
    if out.returncode != 0:
        raise RuntimeError(f"hardware probe failed (exit {out.returncode}): {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout)


class EngineChild:
    """One engine's worker process (ds4kit.bench.engine_worker), driven one repetition at a time."""

    def __init__(self, engine: str, spec: dict[str, Any], log_path: Path):
        self.engine = engine
        self.result: dict[str, Any] = {"status": "failed", "reps": []}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
            json.dump(dict(spec, engine=engine), f)
            self._spec_path = f.name
        self._log_path = log_path
        self._log = open(log_path, "w", encoding="utf-8")
        self._proc = subprocess.Popen([sys.executable, "-m", "ds4kit.bench.engine_worker", self._spec_path],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
                                      env=_child_env(), **own_process_group())

    @property
    def ok(self) -> bool:
        return self.result["status"] == "ok"

    def _read(self) -> dict[str, Any] | None:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        return json.loads(line) if line else None

    def _failed(self, ev: dict[str, Any] | None) -> None:
        if ev is not None and ev.get("event") == "error":
            self.result.update(status="failed", reason=f"{ev['type']}: {ev['message']}")
        elif ev is not None and ev.get("event") == "unavailable":
            self.result.update(status="unavailable", reason=ev["reason"])
        else:
            rc = self._proc.wait()
            tail = self._log_path.read_text(encoding="utf-8", errors="replace").strip()[-1500:]
            self.result.update(status="failed", reason=f"worker exited with status {rc}; log tail: {tail}")

    def wait_loaded(self) -> None:
        ev = self._read()
        if ev is not None and ev.get("event") == "loaded":
            ev.pop("event")
            self.result.update(ev, status="ok")
        else:
            self._failed(ev)

    def run(self, test: str, rep: int) -> dict[str, Any] | None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps({"cmd": "run", "test": test, "rep": rep}) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            self._failed(None)
            return None
        ev = self._read()
        if ev is None or ev.get("event") != "rep":
            self._failed(ev)
            return None
        ev.pop("event")
        self.result["reps"].append(ev)
        return ev

    def close(self) -> dict[str, Any]:
        try:
            if self.ok:
                assert self._proc.stdin is not None
                self._proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self._proc.stdin.flush()
                ev = self._read()
                if ev is not None and ev.get("event") == "done":
                    self.result["peak_rss_kib"] = ev["peak_rss_kib"]
                else:
                    self._failed(ev)
            if self._proc.stdin:
                self._proc.stdin.close()
            rc = self._proc.wait(timeout=120)
            if rc != 0 and self.ok:
                self._failed(None)
        finally:
            self._log.close()
            os.unlink(self._spec_path)
        return self.result


def run_engines(engines: list[str], spec: dict[str, Any], tests: list[dict[str, Any]], reps: int, delay_s: float,
                log_path: Callable[[str], Path], bar: Any, on_rep: Callable[[str, dict[str, Any]], None],
                should_stop: Callable[[], bool]) -> dict[str, dict[str, Any]]:
    """Loads each engine in its own child, then alternates them repetition by repetition
    (A B, B A, ...) so that both see the same background load on a shared machine. Once
    should_stop() is true no new repetition starts; the finished ones are kept."""
    children: dict[str, EngineChild] = {}
    try:
        for engine in engines:
            if should_stop():
                break
            bar.describe(f"{engine}: loading and warming up")
            child = EngineChild(engine, spec, log_path(engine))
            children[engine] = child
            child.wait_loaded()
            if not child.ok:
                bar.skip(len(tests) * reps)
        for i, test in enumerate(tests):
            if delay_s > 0 and i > 0:  # llama-bench's --delay: a pause before each test
                _sleep_unless(delay_s, should_stop)
            for rep in range(reps):
                order = engines if rep % 2 == 0 else engines[::-1]
                for engine in order:
                    child = children.get(engine)
                    if child is None or not child.ok or should_stop():
                        continue
                    if engine not in test.get("engines", engines):
                        bar.skip(1)
                        continue
                    ev = child.run(test["name"], rep)
                    if ev is None:
                        bar.skip(len(tests) * reps - len(child.result["reps"]))
                        continue
                    on_rep(engine, ev)
                    bar.step(f"{engine}: {test['name']} rep {rep + 1}")
                    if len(children) > 1:
                        time.sleep(_SWITCH_PAUSE_S)
    finally:
        results = {e: c.close() for e, c in children.items()}
    for engine in engines:  # only when interrupted before the engine was started
        results.setdefault(engine, {"status": "not_run", "reason": "interrupted before it started", "reps": []})
    return results


def _sleep_unless(seconds: float, should_stop: Callable[[], bool]) -> None:
    end = time.monotonic() + seconds
    while not should_stop() and time.monotonic() < end:
        time.sleep(min(0.1, max(0.0, end - time.monotonic())))


def best_probe(probes: list[dict[str, Any]]) -> dict[str, Any]:
    """The highest bandwidth and matmul rate over the probes (before and after the engines), and
    the GPU's highest bandwidth where the probes measured one."""
    bw = max((p["bandwidth"] for p in probes), key=lambda b: b["bytes_per_s"])
    mm = max((p["matmul"] for p in probes), key=lambda m: m["flop_per_s"])
    out = {"llc_bytes": probes[0]["llc_bytes"], "bandwidth": bw, "matmul": mm,
           "runs": [{"bandwidth_bytes_per_s": p["bandwidth"]["bytes_per_s"],
                     "matmul_flop_per_s": p["matmul"]["flop_per_s"],
                     **({"device_bandwidth_bytes_per_s": (p.get("device") or {}).get("bytes_per_s")}
                        if "device" in p else {})} for p in probes]}
    devices = [p["device"] for p in probes if p.get("device")]
    measured = [d for d in devices if "bytes_per_s" in d]
    if measured:
        out["device"] = max(measured, key=lambda d: d["bytes_per_s"])
    elif devices:
        out["device"] = devices[0]  # {"kind", "error"}: why the GPU was not measured
    return out


def fraction_limits(hw: dict[str, Any], on_device: bool) -> dict[str, Any]:
    """What `fractions` divides by: the host's measured limits, or on a GPU backend the device's
    (None where there is no figure: no fraction then, rather than one against the wrong limit)."""
    if not on_device:
        return {"on": "host", "bandwidth_bytes_per_s": hw["bandwidth"]["bytes_per_s"],
                "matmul_flop_per_s": hw["matmul"]["flop_per_s"]}
    dev = hw.get("device") or {}
    return {"on": "device", "device": dev.get("device"), "bandwidth_bytes_per_s": dev.get("bytes_per_s"),
            "matmul_flop_per_s": dev.get("matrix_flop_per_s"), "matmul_source": dev.get("matrix_peak_source")}


# -- statistics -------------------------------------------------------------------
def summarize_test(reps: list[dict[str, Any]]) -> dict[str, Any]:
    secs = [r["seconds"] for r in reps]
    n = reps[0]["n_tokens"]
    tps = [n / s for s in secs]
    return {
        "n_tokens": n,
        "reps": len(secs),
        "seconds": secs,
        "mean_s": statistics.fmean(secs),
        "stddev_s": statistics.stdev(secs) if len(secs) > 1 else 0.0,
        "min_s": min(secs),
        "tok_s": statistics.fmean(tps),           # llama-bench's avg_ts: mean of per-rep tok/s
        "tok_s_stddev": statistics.stdev(tps) if len(tps) > 1 else 0.0,
        "tok_s_best": max(tps),
    }


def fractions(tests: dict[str, dict[str, Any]], kinds: dict[str, str], work: dict[str, Any],
              hw: dict[str, Any]) -> dict[str, float]:
    out = {}
    limits = hw.get("limits") or fraction_limits(hw, False)
    bw, flops = limits["bandwidth_bytes_per_s"], limits["matmul_flop_per_s"]
    per_tok_bytes = work["decode_bytes_per_token"]["total"]
    pp = work["prefill_params"]
    for name, t in tests.items():
        if kinds[name] in ("tg", "gen"):
            if bw:
                out[name] = t["tok_s"] * per_tok_bytes / bw
        elif flops:
            # the output head runs once per prefill (last row only), the rest once per token
            n = t["n_tokens"]
            flop_per_tok = 2.0 * (pp["per_token"] + pp["output_head"] / n)
            out[name] = t["tok_s"] * flop_per_tok / flops
    return out


def run_engine_bench(config: Any, target: Any, *, say: Callable[[str], None], stop: Any) -> Path:
    """The bench of ds4kit.jobs.bench_engine (config: its BenchEngineConfig; target: an unloaded
    EmbeddedTarget whose options the ds4kit worker rebuilds; stop: the job's StopSignals).
    Returns the run folder."""
    from ds4kit.jobs.telemetry import RunTelemetry
    from ds4kit.bench.engine_bench_output import plot_bench, plot_frontier, render_summary, write_csv
    from ds4kit.bench.progress import RepProgress

    engines = list(config.engines)
    threads = target.options.resolved_threads
    model_path = target.path
    numerics = target.options.numerics.as_dict()

    with start_run("bench-engine", config.out, command=config.command) as run:
        run.set_target(dict(target.describe(), threads=threads))
        work = model_work(model_path)
        run.set_model(work.pop("manifest"))
        pp, tg, reps = list(config.pp), list(config.tg), config.reps
        if target.options.drafter is not None and not tg:
            run.warn("no-generation", "--drafter without a -n size: no DSpark on/off test runs")
        depths = tuple(config.depths)
        tests = make_tests(pp, tg, work["n_vocab"], config.seed, depths)
        if target.options.drafter is not None:
            tests += generation_tests(tests)
        kinds = {t["name"]: t["kind"] for t in tests}
        n_ctx = max(depths) + max([max(pp or [0]), 1 + max(tg or [0]), 16]) + 16
        n_ctx = (n_ctx + 255) // 256 * 256
        target_spec = dict(target.options.spec(), model=str(model_path.resolve()), threads=threads)
        # llama.cpp on the same device as ours: every layer offloaded when ds4kit runs on a GPU.
        gpu_layers = config.llama_gpu_layers if config.llama_gpu_layers is not None else (
            999 if target.options.backend in ("cuda", "hip") else 0)
        spec = {"model": str(model_path.resolve()), "threads": threads, "n_ctx": n_ctx, "n_batch": config.n_batch,
                "llama_gpu_layers": gpu_layers,
                "prefill_mode": config.prefill_mode, "reps": reps, "delay_s": config.delay_s, "tests": tests,
                "depth_tokens": depth_tokens(depths, work["n_vocab"], config.seed), "target": target_spec,
                "warmup_tokens": tests[0]["tokens"][:16] if kinds[tests[0]["name"]] == "pp" else tests[0]["tokens"][:4]}
        loadavg_start = list(os.getloadavg())

        # On a GPU backend the fractions divide by the GPU's limits, measured beside the host's.
        device = target.options.backend if target.options.backend in ("cuda", "hip", "auto") else None
        say(f"hardware probe: memory bandwidth and float32 matmul with {threads} threads"
            + (f", and the {device} device's bandwidth" if device else ""))
        probes = [run_hw_probe(threads, config.probe_mb, device)]
        rep_log = run.items("reps.jsonl", key="id")

        tel = RunTelemetry(run, getattr(config, "thermal", None), stop, say)
        done = [0]

        def on_rep(engine: str, ev: dict[str, Any]) -> None:
            rep_log.append({"id": f"{engine}/{ev['test']}/{ev['rep']}", "engine": engine, **ev})
            done[0] += 1
            tel.progress(done[0])  # repetitions finished: the soak summary's rate is reps per second
            tel.mark(f"{engine} {ev['test']} rep {ev['rep']}")

        with tel, RepProgress(len(engines) * len(tests) * reps, enabled=config.progress) as bar:
            raw = run_engines(engines, spec, tests, reps, config.delay_s,
                              lambda e: run.add_file(f"log_{e}", f"worker-{e.replace('.', '_')}.log"), bar,
                              on_rep, stop)
        interrupted = stop()
        ours = raw.get("ds4kit", {})
        if ours.get("status") == "ok":  # only the worker loaded the engine: what auto resolved to
            run.set_target(dict(target.describe(), threads=threads, backend_resolved=ours["info"]["backend"]))
        for engine, res in raw.items():
            if res["status"] == "unavailable":
                run.warn("llama-cpp-missing", f"{engine} is not available ({res['reason']}): ran without it, "
                         "NO ratio against llama.cpp could be measured")
            elif res["status"] == "failed":
                run.warn("engine-failed", f"{engine} failed: {res.get('reason')}"
                         + ("; NO ratio against llama.cpp could be measured" if len(engines) > 1 else ""))

        if interrupted:
            say("interrupted: keeping the repetitions that finished; no second hardware probe")
        else:
            say("hardware probe again (the better of the two runs counts: other load only lowers a limit)")
            probes.append(run_hw_probe(threads, config.probe_mb, device))
        hw = best_probe(probes)
        on_device = str((ours.get("info") or {}).get("backend") or "").startswith(("cuda", "hip"))
        hw["limits"] = fraction_limits(hw, on_device)
        if on_device and not hw["limits"]["bandwidth_bytes_per_s"]:
            run.warn("device-limits-missing", "ds4kit ran on a GPU whose bandwidth was not measured "
                     f"({(hw.get('device') or {}).get('error', 'no device probe')}): NO decode or prefill fractions")
        elif on_device and not hw["limits"]["matmul_flop_per_s"]:
            run.warn("device-peak-unknown", f"{hw['limits']['matmul_source']}: NO prefill fractions")
        engine_results = {e: _fold_engine(res, tests, kinds, work, hw) for e, res in raw.items()}

        if "llama.cpp" not in engines:
            run.warn("llama-cpp-missing", "llama.cpp was not among --engines: NO ratio against llama.cpp "
                     "could be measured")
        _warn_noise(run, engine_results, loadavg_start, threads, on_device)
        ratios = _ratios(engine_results, tests)
        if "llama.cpp" in engines and "ds4kit" not in engines:
            run.warn("ds4kit-missing", "ds4kit was not among --engines: no ratio")

        results = {
            "settings": {"pp": pp, "tg": tg, "depths": list(depths), "reps": reps, "threads": threads,
                         "delay_s": config.delay_s,
                         "engines": engines, "prefill_mode": config.prefill_mode, "n_ctx": n_ctx,
                         "n_batch": config.n_batch, "llama_gpu_layers": gpu_layers, "seed": config.seed,
                         "backend": target.options.backend,
                         "fp8_kv": numerics["fp8_kv"], "indexer_fp4": numerics["indexer_fp4"]},
            "numerics": numerics_comparison(numerics),
            "model": {k: work[k] for k in ("architecture", "name", "size_bytes", "n_params", "n_vocab")},
            "work_per_token": {"decode_bytes": work["decode_bytes_per_token"], "prefill_params": work["prefill_params"]},
            "hardware": hw,
            "definitions": DEVICE_FRACTION_DEFINITIONS if on_device else FRACTION_DEFINITIONS,
            "engines": engine_results,
            "ratios": ratios,
            "speculation": speculation_summary(engine_results.get("ds4kit", {}), raw.get("ds4kit", {}), tests),
            "ratio_measured": bool(ratios),
            "target_met": all(r["ratio"] >= 1.0 for r in ratios.values()) if ratios else None,
            "loadavg": {"start": [round(x, 2) for x in loadavg_start],
                        "end": [round(x, 2) for x in os.getloadavg()]},
            "telemetry": tel.results(),
        }
        rows = write_csv(run.add_file("csv", "results.csv"), results, tests, model_path)
        results["csv_rows"] = len(rows)
        try:
            plot_bench(run.add_file("plot", "bench.png"), results, [t["name"] for t in tests])
        except Exception as exc:  # a missing plot must not lose the measurements
            run.report["files"].pop("plot", None)
            run.warn("plot-failed", f"bench.png not written: {exc}")
        if len(set(depths)) >= 2:  # a frontier needs two depths
            try:
                plot_frontier(run.add_file("frontier_plot", "frontier.png"), results, tests)
            except Exception as exc:
                run.report["files"].pop("frontier_plot", None)
                run.warn("plot-failed", f"frontier.png not written: {exc}")
        run.finish(results, summary_md=render_summary(results, [t["name"] for t in tests]),
                   status="interrupted" if interrupted else "ok", interrupt=stop.record() if interrupted else None)
        return run.folder


def numerics_comparison(ds4kit_numerics: dict[str, bool]) -> dict[str, Any]:
    """Which roundings each engine applies: llama.cpp has neither D rounding, so only
    --no-fp8-kv --no-indexer-fp4 compares like with like."""
    like = not ds4kit_numerics["fp8_kv"] and not ds4kit_numerics["indexer_fp4"]
    note = ("like for like: neither engine rounds KV rows to FP8 or the indexer to FP4" if like else
            "ds4kit applies D's " + " and ".join(
                n for n, on in (("FP8-E4M3 KV round trip", ds4kit_numerics["fp8_kv"]),
                                ("indexer FP4 rounding", ds4kit_numerics["indexer_fp4"])) if on)
            + "; llama.cpp has neither: pass --no-fp8-kv --no-indexer-fp4 for a like-for-like comparison")
    return {"ds4kit": dict(ds4kit_numerics), "llama.cpp": {"fp8_kv": False, "indexer_fp4": False},
            "like_for_like": like, "note": note}


def _fold_engine(res: dict[str, Any], tests: list[dict[str, Any]], kinds: dict[str, str], work: dict[str, Any],
                 hw: dict[str, Any]) -> dict[str, Any]:
    by_test: dict[str, list[dict[str, Any]]] = {}
    for ev in res["reps"]:
        by_test.setdefault(ev["test"], []).append(ev)
    summaries = {t["name"]: summarize_test(by_test[t["name"]]) for t in tests if t["name"] in by_test}
    entry: dict[str, Any] = {"status": res["status"], "tests": summaries, "rep_loadavg": {
        name: [ev["loadavg"] for ev in evs] for name, evs in by_test.items()},
        "rep_utc": {name: [ev["utc"] for ev in evs] for name, evs in by_test.items()},
        "rep_t_end": {name: [ev["t_end"] for ev in evs] for name, evs in by_test.items()}}
    for key in ("reason", "load_s", "info"):
        if key in res:
            entry[key] = res[key]
    if "peak_rss_kib" in res:
        entry["peak_rss_bytes"] = res["peak_rss_kib"] * 1024
    if "rss_after_load_kib" in res:
        entry["rss_after_load_bytes"] = res["rss_after_load_kib"] * 1024
    entry["fractions"] = fractions(summaries, kinds, work, hw) if summaries else {}
    return entry


NOISY_CV = 0.2  # stddev / mean of tok/s above which a test's repetitions disagree too much to trust


def _warn_noise(run: Any, engine_results: dict[str, dict[str, Any]], loadavg_start: list[float], threads: int,
                on_device: bool = False) -> None:
    """Say loudly when the numbers are unlikely to mean what they seem (a busy machine)."""
    cpus = usable_cpus()
    if on_device:
        # The GPU computes; one host thread issues its work (and llama.cpp's, all layers offloaded),
        # so only a machine without a free CPU for it is busy.
        if loadavg_start and loadavg_start[0] + 1 > cpus:
            run.warn("busy-machine", f"load average {loadavg_start[0]:.2f} at start leaves no CPU of {cpus} free "
                     "for the thread that issues the GPU's work; prefer a quieter machine")
    elif loadavg_start and loadavg_start[0] + threads > cpus:
        run.warn("busy-machine", f"load average {loadavg_start[0]:.2f} at start plus {threads} benchmark threads exceeds "
                 f"{cpus} CPUs: the engines compete with other work, and an engine whose threads spin at barriers "
                 "loses most; prefer -t 1 here, or a quieter machine")
    noisy = [f"{e} {name} ({t['tok_s_stddev'] / t['tok_s']:.0%})" for e, r in engine_results.items()
             for name, t in r["tests"].items() if t["reps"] > 1 and t["tok_s_stddev"] > NOISY_CV * t["tok_s"]]
    if noisy:
        run.warn("noisy", f"tok/s varies by more than {NOISY_CV:.0%} of the mean between repetitions in: "
                 f"{', '.join(noisy)}; compare the ratio of best repetitions, or rerun on a quieter machine")


def speculation_summary(ours: dict[str, Any], raw: dict[str, Any], tests: list[dict[str, Any]]) -> dict[str, Any]:
    """DSpark on against off, per generation length and depth: tok/s of each, the speedup, the
    acceptance, and whether every repetition of both generated the same tokens (greedy
    speculative decoding is lossless, so they must)."""
    out: dict[str, Any] = {}
    done = ours.get("tests", {})
    reps: dict[str, list[dict[str, Any]]] = {}
    for ev in raw.get("reps", []):
        reps.setdefault(ev["test"], []).append(ev)
    for t in tests:
        off = t.get("off")  # the DSpark-on tests name their off twin
        if off is None or t["name"] not in done or off not in done:
            continue
        shas = {ev.get("tokens_sha256") for ev in reps.get(t["name"], []) + reps.get(off, [])}
        acc = [ev["speculation"]["acceptance_rate"] for ev in reps.get(t["name"], [])
               if ev.get("speculation") and ev["speculation"].get("acceptance_rate") is not None]
        out[off] = {"off_tok_s": done[off]["tok_s"], "on_tok_s": done[t["name"]]["tok_s"],
                    "speedup": done[t["name"]]["tok_s"] / done[off]["tok_s"],
                    "acceptance_rate": sum(acc) / len(acc) if acc else None,
                    "tokens_identical": len(shas) == 1}
    return out


def _ratios(engine_results: dict[str, dict[str, Any]], tests: list[dict[str, Any]]) -> dict[str, Any]:
    ours = engine_results.get("ds4kit", {})
    theirs = engine_results.get("llama.cpp", {})
    if ours.get("status") != "ok" or theirs.get("status") != "ok":
        return {}
    out = {}
    for t in tests:
        if t["name"] not in ours["tests"] or t["name"] not in theirs["tests"]:
            continue  # interrupted before both engines finished it
        a, b = ours["tests"][t["name"]], theirs["tests"][t["name"]]
        r = a["tok_s"] / b["tok_s"]
        out[t["name"]] = {"ds4kit_tok_s": a["tok_s"], "llama_cpp_tok_s": b["tok_s"], "ratio": r, "target_met": r >= 1.0,
                          # best repetition of each: the least disturbed by other load on a shared machine
                          "ratio_best": a["tok_s_best"] / b["tok_s_best"]}
    return out
