"""`ds4kit probe margins` on both targets.

- Our engine (tiny synthetic model): every verify row bitwise equal to one-token decode, at every
  width 1-8, verdict pass, and the report says so.
- llama.cpp (synthetic `small` model, every matrix Q8_0): the probe's rows are checked against an
  independent computation that drives llama-cpp-python directly through its high-level API
  (`Llama.eval`, `save_state`/`load_state`: none of the target's session code); they must agree
  exactly (llama.cpp is deterministic on the CPU), and there must be rows that differ from decode
  and argmax flips. With --tolerance 0 those flips count, so the verdict is fail and the exit
  status 1: the verdict can fail.

llama.cpp tests fail (do not skip) when llama-cpp-python is missing, unless
DS4KIT_ALLOW_MISSING_LLAMA=1.
"""
from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.probes.margins.rows import RowResult, summarize, verdict
from ds4kit.probes.margins.suite import load_suite
from ds4kit.reports.schema import validate_report
from llama_required import llama_cpp_or_fail


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def read_rows(folder) -> list[dict]:
    return list(csv.DictReader(open(folder / "rows.csv", encoding="utf-8")))


def rows_from_csv(rows: list[dict]) -> list[RowResult]:
    return [RowResult(r["prompt_id"], int(r["position"]), int(r["width"]), int(r["row"]), int(r["token"]),
                      float(r["max_abs_dlogit"]), r["bitwise_equal"] == "True", int(r["ref_argmax"]),
                      int(r["verify_argmax"]), float(r["ref_top2_margin"]), r["finite"] == "True") for r in rows]


def prompt_ids(model_path, suite_item) -> list[int]:
    from ds4kit.engine import Model

    m = Model.load(model_path, threads=1)
    return m.encode(m.render_chat([{"role": "user", "content": suite_item.prompt}]))


# -- our engine -----------------------------------------------------------------------------------

def test_engine_every_row_bitwise_equal_at_every_width(tiny_target, tmp_path):
    out = tmp_path / "m"
    res = invoke("probe", "margins", "-m", tiny_target, "--widths", "1-8", "--positions", 4, "--threads", 2,
                 "--no-progress", "--out", out)
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep, "probe-margins")
    r = rep["results"]
    suite = load_suite("default")
    n_rows = len(suite.items) * 4 * sum(range(1, 9))
    assert r["verdict"] == "pass" and r["target_kind"] == "embedded" and r["target_claims_bitwise_verify"]
    assert r["rows"] == r["bitwise_equal_rows"] == n_rows and r["all_rows_bitwise_equal"] is True
    assert r["max_abs_dlogit"] == 0.0 and r["flips"] == 0
    assert "bitwise equal" in r["statement"] and [w["width"] for w in r["per_width"]] == list(range(1, 9))
    assert all(w["max_abs_dlogit"] == 0.0 and w["bitwise_equal_rows"] == w["rows"] for w in r["per_width"])
    rows = read_rows(out)
    assert len(rows) == n_rows and all(x["bitwise_equal"] == "True" for x in rows)
    # The rows are the suite's tokens: the first prompt's last positions, its own next tokens.
    ids = prompt_ids(tiny_target, suite.items[0])
    first = [x for x in rows if x["prompt_id"] == suite.items[0].id]
    assert {int(x["position"]) for x in first} == set(range(len(ids) - 8 - 3, len(ids) - 8 + 1))
    assert all(int(x["token"]) == ids[int(x["position"]) + int(x["row"])] for x in first)
    assert (out / "histogram.png").stat().st_size > 0
    assert "every row bitwise equal" in (out / "summary.md").read_text()


def test_bad_arguments_and_suites_are_named(tiny_target, tmp_path):
    for args, needle in ((("--widths", "0-3"), "--widths"), (("--widths", "x"), "--widths"),
                         (("--widths", "5-2"), "--widths"), (("--widths", "1-33"), "--widths"),
                         (("--tolerance", "-1"), "--tolerance"), (("--tolerance", "nan"), "--tolerance"),
                         (("--positions", "0"), "--positions"), (("--suite", "nosuch"), "--suite"),
                         (("--target", "vllm"), "--target")):
        res = invoke("probe", "margins", "-m", tiny_target, *args, "--out", tmp_path / "never")
        assert res.exit_code == 2 and needle in res.output, (args, res.output)
    assert not (tmp_path / "never").exists()
    bad = tmp_path / "bad.json"
    for content, needle in (("{", "not a readable JSON suite"), ('{"items": []}', "'items'"),
                            ('{"items": [{"id": "a"}]}', "'prompt'"),
                            ('{"items": [{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}]}', "twice")):
        bad.write_text(content)
        res = invoke("probe", "margins", "-m", tiny_target, "--suite", bad, "--out", tmp_path / "never")
        assert res.exit_code == 2 and str(bad) in res.output and needle in res.output, res.output
    # A prompt shorter than the widest verify: a clear error, recorded in the report.
    bad.write_text('{"items": [{"id": "short", "prompt": "Hi", "raw": true}]}')
    res = invoke("probe", "margins", "-m", tiny_target, "--suite", bad, "--out", tmp_path / "short")
    assert res.exit_code == 2 and "'short' has 1 tokens" in res.output, res.output
    rep = json.loads((tmp_path / "short" / "report.json").read_text())
    assert rep["status"] == "failed" and "'short'" in rep["error"]["message"]


def test_llama_cpp_missing_is_one_clear_error(tiny_target, tmp_path, monkeypatch):
    from ds4kit.targets.llama_cpp_loader import HIDE_LLAMA_ENV

    monkeypatch.setenv(HIDE_LLAMA_ENV, "1")
    res = invoke("probe", "margins", "-m", tiny_target, "--target", "llama.cpp", "--out", tmp_path / "r")
    assert res.exit_code == 2 and "llama_cpp hidden on purpose" in res.output, res.output
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    assert rep["status"] == "failed" and rep["error"]["type"] == "LlamaCppUnavailable"
    assert rep["manifest"]["target"]["kind"] == "llama.cpp"


# -- llama.cpp ------------------------------------------------------------------------------------

WIDTHS = (1, 2, 3, 4)
POSITIONS = 6




@pytest.fixture(scope="module")
def maths_suite(tmp_path_factory):
    item = next(i for i in load_suite("default").items if i.id == "maths")
    path = tmp_path_factory.mktemp("margins_suite") / "maths.json"
    path.write_text(json.dumps({"suite": "maths-only", "items": [{"id": item.id, "prompt": item.prompt}]}))
    return path, item


def independent_rows(model_path, ids: list[int], positions: list[int]) -> dict:
    """What the probe should find, computed with llama-cpp-python's high-level API: the state
    before each position saved with Llama.save_state, every verify one Llama.eval of w tokens,
    the reference one Llama.eval per token."""
    lc = llama_cpp_or_fail()
    llm = lc.Llama(model_path=str(model_path), n_ctx=len(ids) + 8, n_batch=64, n_ubatch=64, n_threads=2,
                   n_threads_batch=2, logits_all=True, verbose=False)
    wmax = max(WIDTHS)
    out = {}
    try:
        for t in ids[:positions[0]]:
            llm.eval([t])
        for p in positions:
            state = llm.save_state()
            verified = {}
            for w in WIDTHS:
                llm.load_state(state)
                llm.eval(ids[p:p + w])
                verified[w] = np.array(llm.scores[p:p + w], dtype=np.float32)
            llm.load_state(state)
            for t in ids[p:p + wmax]:
                llm.eval([t])
            ref = np.array(llm.scores[p:p + wmax], dtype=np.float32)
            llm.load_state(state)
            llm.eval([ids[p]])
            for w in WIDTHS:
                for i in range(w):
                    v, r = verified[w][i], ref[i]
                    top = np.sort(r.astype(np.float64))[-2:]
                    out[(p, w, i)] = {"max_abs_dlogit": float(np.max(np.abs(v.astype(np.float64) - r))),
                                      "bitwise_equal": bool(np.array_equal(v, r)), "ref_argmax": int(np.argmax(r)),
                                      "verify_argmax": int(np.argmax(v)), "margin": float(top[1] - top[0])}
    finally:
        llm.close()
    return out


@pytest.mark.llama
def test_llama_cpp_differences_found_as_llama_cpp_computes_them(small_q8, maths_suite, tmp_path):
    suite_path, item = maths_suite
    out = tmp_path / "llama"
    res = invoke("probe", "margins", "-m", small_q8, "--target", "llama.cpp", "--suite", suite_path,
                 "--widths", "1-4", "--positions", POSITIONS, "--tolerance", 0, "--threads", 2, "--no-progress",
                 "--out", out)
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep, "probe-margins")
    r = rep["results"]
    rows = rows_from_csv(read_rows(out))

    ids = prompt_ids(small_q8, item)
    last = len(ids) - max(WIDTHS)
    positions = list(range(last - POSITIONS + 1, last + 1))
    want = independent_rows(small_q8, ids, positions)
    assert len(rows) == len(want) == POSITIONS * sum(WIDTHS) == r["rows"]
    for row in rows:
        w = want[(row.position, row.width, row.row)]
        assert row.token == ids[row.position + row.row]
        assert (row.max_abs_dlogit, row.bitwise_equal, row.ref_argmax, row.verify_argmax) == (
            w["max_abs_dlogit"], w["bitwise_equal"], w["ref_argmax"], w["verify_argmax"]), row
        assert row.ref_top2_margin == pytest.approx(w["margin"], abs=0, rel=1e-12)

    flips = [k for k, w in want.items() if w["ref_argmax"] != w["verify_argmax"]]
    differ = [k for k, w in want.items() if not w["bitwise_equal"]]
    # llama.cpp's batched rows are not decode's: some differ, some flip the argmax.
    assert differ and flips, "llama.cpp agreed bitwise here: the measurement this test is built on no longer holds"
    assert r["bitwise_equal_rows"] == len(want) - len(differ) and r["all_rows_bitwise_equal"] is False
    assert r["max_abs_dlogit"] == max(w["max_abs_dlogit"] for w in want.values()) > 0
    assert r["flips"] == len(flips) == len(r["flip_list"])
    assert r["flipped_positions"] == len({p + i for p, _, i in flips})
    assert r["target_kind"] == "llama.cpp" and r["target_claims_bitwise_verify"] is False
    # Width 1 is the same call as decode: always equal.
    assert all(w["bitwise_equal"] for (p, width, i), w in want.items() if width == 1)

    # --tolerance 0: every flip at a non-tied row counts, so the verdict is fail and the exit status 1.
    counted = [k for k in flips if want[k]["margin"] > 0]
    assert r["counted_flips"] == len(counted) > 0
    assert r["verdict"] == "fail" and res.exit_code == 1, res.output
    # The same rows pass at a tolerance above every flip's margin, and fail just below the largest.
    top = max(want[k]["margin"] for k in flips)
    assert verdict(summarize(rows, list(WIDTHS), top), complete=True) == "pass"
    assert verdict(summarize(rows, list(WIDTHS), top * 0.999), complete=True) == "fail"
    assert (out / "histogram.png").stat().st_size > 0


def test_sigint_keeps_the_rows_compared_so_far(tiny_target, tmp_path):
    """Ctrl-C for real, in a child: exit 130, status interrupted, verdict incomplete, and the report
    counts exactly the rows rows.csv kept."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(repo) + (os.pathsep + os.environ["PYTHONPATH"]
                                                   if os.environ.get("PYTHONPATH") else ""))
    out = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-m", "ds4kit", "probe", "margins", "-m", str(tiny_target),
                              "--positions", "1000", "--threads", "1", "--no-progress", "--out", str(out)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 180
        while time.monotonic() < end:
            csv_path = out / "rows.csv"
            if csv_path.is_file() and len(csv_path.read_text().splitlines()) > 1 + 36:
                break
            assert child.poll() is None, "the probe finished before it could be interrupted"
            time.sleep(0.2)
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=120) == 130
    finally:
        if child.poll() is None:
            child.kill()
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep, "probe-margins")
    r = rep["results"]
    assert rep["status"] == "interrupted" and rep["interrupt"]["signal"] == "SIGINT"
    assert r["verdict"] == "incomplete" and r["all_rows_bitwise_equal"] is True
    total = sum(i["tokens"] - 8 + 1 for i in r["suite"]["items"])  # every position fits: --positions 1000
    assert 0 < r["positions_compared"] < total
    assert r["rows"] == len(read_rows(out)) == 36 * r["positions_compared"]
