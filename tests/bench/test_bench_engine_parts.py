"""Parts of `ds4kit bench engine`: the hardware probe, statistics, argument errors."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from ds4kit.bench.engine_bench import make_tests, parse_engines, parse_sizes, run_hw_probe, summarize_test
from ds4kit.bench.hw_limits import probe
from ds4kit.cli import main


def _check_probe(p: dict, threads: int, array_bytes: int) -> None:
    bw, mm = p["bandwidth"], p["matmul"]
    assert p["llc_bytes"] > 0
    assert bw["array_bytes"] == array_bytes and bw["threads"] == threads
    assert bw["copy_bytes_per_s"] > 0 and bw["add_bytes_per_s"] > 0
    assert bw["bytes_per_s"] == max(bw["copy_bytes_per_s"], bw["add_bytes_per_s"])
    assert mm["flop_per_s"] > 0 and mm["threads"] == threads and mm["dtype"] == "float32"


def test_hardware_probe_in_process_positive():
    _check_probe(probe(2, 8 * 2**20), 2, 8 * 2**20)


def test_hardware_probe_child_positive():
    _check_probe(run_hw_probe(1, 8), 1, 8 * 2**20)


def test_summarize_test_matches_numpy():
    secs = [0.5, 0.25, 0.4]
    s = summarize_test([{"seconds": x, "n_tokens": 64} for x in secs])
    a = np.array(secs)
    assert s["reps"] == 3 and s["n_tokens"] == 64
    assert s["mean_s"] == pytest.approx(a.mean())
    assert s["stddev_s"] == pytest.approx(a.std(ddof=1))
    assert s["min_s"] == 0.25
    assert s["tok_s"] == pytest.approx(np.mean(64 / a))
    assert s["tok_s_stddev"] == pytest.approx(np.std(64 / a, ddof=1))
    assert s["tok_s_best"] == pytest.approx(256.0)


def test_make_tests_fixed_tokens_and_shapes():
    a = make_tests([8, 32], [4], n_vocab=129280, seed=0)
    b = make_tests([8, 32], [4], n_vocab=129280, seed=0)
    assert a == b  # both engines (separate processes) get the same spec, so identical work
    assert [t["name"] for t in a] == ["pp8", "pp32", "tg4"]
    assert [len(t["tokens"]) for t in a] == [8, 32, 4]
    assert "start_token" in a[2]
    assert all(100 <= x < 100_000 for t in a for x in t["tokens"])
    assert make_tests([8], [], n_vocab=129280, seed=1)[0]["tokens"] != a[0]["tokens"]


def test_parse_sizes_and_engines():
    assert parse_sizes("64,256", "-p") == [64, 256]
    assert parse_sizes("", "-n") == []
    with pytest.raises(ValueError, match=r"-p: 'x' is not an integer"):
        parse_sizes("64,x", "-p")
    with pytest.raises(ValueError, match="at least 1"):
        parse_sizes("0", "-n")
    assert parse_engines("llama.cpp,ds4kit,ds4kit") == ["llama.cpp", "ds4kit"]
    with pytest.raises(ValueError, match="unknown engine"):
        parse_engines("ds4kit,vllm")


@pytest.mark.parametrize("args, needle", [
    (["-p", "6x4"], "-p"),
    (["--engines", "vllm"], "vllm"),
    (["-p", "", "-n", ""], "nothing to run"),
])
def test_cli_argument_errors(args, needle, tmp_path):
    model = tmp_path / "unused.gguf"
    model.write_bytes(b"")
    res = CliRunner().invoke(main, ["bench", "engine", str(model), *args, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert needle in res.output


def test_cli_missing_model_names_path(tmp_path):
    missing = tmp_path / "nope.gguf"
    res = CliRunner().invoke(main, ["bench", "engine", str(missing), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert str(missing) in res.output and "not found" in res.output


def _engine_entry(seconds: list[float], n: int = 32) -> dict:
    return {"status": "ok", "tests": {f"tg{n}": summarize_test([{"seconds": x, "n_tokens": n} for x in seconds])}}


def test_noise_and_busy_warnings(tmp_path):
    from ds4kit.bench.engine_bench import _warn_noise, usable_cpus
    from ds4kit.reports import start_run

    cpus = usable_cpus()
    run = start_run("bench-engine", tmp_path / "quiet", quiet_warnings=True)
    _warn_noise(run, {"ds4kit": _engine_entry([1.0, 1.01, 0.99])}, [0.0, 0.0, 0.0], 1 if cpus > 1 else 0)
    assert run.report["warnings"] == []

    run = start_run("bench-engine", tmp_path / "busy", quiet_warnings=True)
    _warn_noise(run, {"ds4kit": _engine_entry([1.0, 1.01, 0.99]), "llama.cpp": _engine_entry([0.5, 11.0, 0.5])},
                [float(cpus), 0.0, 0.0], 1)
    codes = {w["code"]: w["message"] for w in run.report["warnings"]}
    assert set(codes) == {"busy-machine", "noisy"}
    assert "llama.cpp tg32" in codes["noisy"] and "ds4kit" not in codes["noisy"]


def test_busy_warning_on_a_gpu_backend_counts_one_host_thread(tmp_path):
    """On a GPU backend the compute threads do not compete for CPUs: a load that leaves one CPU
    free is quiet whatever -t says; a load that leaves none is busy."""
    from ds4kit.bench.engine_bench import _warn_noise, usable_cpus
    from ds4kit.reports import start_run

    cpus = usable_cpus()
    entry = {"ds4kit": _engine_entry([1.0, 1.01, 0.99])}
    run = start_run("bench-engine", tmp_path / "gpu-quiet", quiet_warnings=True)
    _warn_noise(run, entry, [max(cpus - 1.5, 0.0), 0.0, 0.0], 16, on_device=True)
    assert run.report["warnings"] == []
    run = start_run("bench-engine", tmp_path / "gpu-busy", quiet_warnings=True)
    _warn_noise(run, entry, [float(cpus), 0.0, 0.0], 16, on_device=True)
    assert [w["code"] for w in run.report["warnings"]] == ["busy-machine"]
