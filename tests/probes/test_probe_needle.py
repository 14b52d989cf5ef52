"""`probe needle` machinery on the tiny synthetic model (random weights: the score is about zero, so
what is checked is the machinery): the needle sits at a sentence boundary at exactly the token
position the report gives (found here by searching the prompt's ids), scoring is an exact literal
(checked against a brute-force edit distance), the restored arm prefills only the question and
agrees with the cold arm, and a real `kill -9` mid-grid loses no finished cell: --resume finishes
the grid with the same cells as an uninterrupted run."""
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.probes.needle import NeedleConfig, run
from ds4kit.probes.needle.haystack import build_cell, load_text, sentences
from ds4kit.probes.needle.scoring import score
from ds4kit.reports.schema import validate_report
from ds4kit.targets import TargetOptions, build_target

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def target(tiny_target):
    t = build_target(TargetOptions(model=tiny_target, threads=2))
    t.load()
    return t


def _occurrences(ids, sub):
    return [i for i in range(len(ids) - len(sub) + 1) if ids[i:i + len(sub)] == sub]


@pytest.mark.parametrize("length,depth", [(600, 0), (600, 37), (1500, 50), (1500, 90), (1500, 100)])
def test_the_needle_is_at_the_reported_token_position_on_a_sentence_boundary(target, length, depth):
    spec = NeedleConfig().load_spec()
    sents = sentences(load_text(spec.text))
    counts = [len(target.tokenize(s, parse_special=False)) for s in sents]
    p = build_cell(target, spec, sents, counts, length, depth)
    needle_ids = target.tokenize(" " + spec.needle, parse_special=False)
    assert _occurrences(p.ids, needle_ids) == [p.needle_position]
    assert p.ids == target.tokenize(target.detokenize(p.ids))            # the prompt is its own tokenisation
    assert len(p.ids) <= length
    before = target.detokenize(p.ids[:p.needle_position])
    assert before.endswith(".") or before.endswith("Document:")          # a sentence boundary (or the start)
    assert p.depth_actual == pytest.approx(100 * (p.needle_position - p.haystack_start) / p.haystack_tokens)
    # The nearest in-paragraph boundary, in tokens: every candidate's position found here by
    # tokenising the prompt's text up to it.
    text = target.detokenize(p.ids)
    head = text.index(spec.instruction) + len(spec.instruction)
    body = text[head:text.index(" " + spec.needle)] + text[text.index(" " + spec.needle) + len(spec.needle) + 1:]
    body = body[:body.rindex(spec.question)]
    cuts = [0, len(body)] + [m.start() for m in re.finditer(r"(?<=\.) (?=\S)", body)]
    goal = depth / 100 * p.haystack_tokens
    cand = [len(target.tokenize(text[:head] + body[:c])) - p.haystack_start for c in cuts]
    assert abs(p.needle_position - p.haystack_start - goal) == min(abs(c - goal) for c in cand)
    assert target.detokenize(p.ids[p.question_position:]).lstrip().startswith(("Now the question", ". Now"))


def _levenshtein(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[-1]


def test_scoring_is_an_exact_literal_and_shows_the_edit():
    s = score("The code is KESTREL-7-7.", "KESTREL-77")
    assert not s["found"] and s["closest"] == "KESTREL-7-7" and s["distance"] == 1
    assert s["edits"] == ["at 9: '-' inserted"]
    assert score("kestrel-77", "KESTREL-77")["found"] is False           # case matters
    assert score("code: KESTREL-77.", "KESTREL-77") == {"found": True, "closest": "KESTREL-77", "distance": 0,
                                                         "edits": []}
    rng = random.Random(5)
    alphabet = "KESTRL-7 8x"
    for _ in range(300):
        ans = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        lit = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        got = score(ans, lit)
        assert got["found"] == (re.search(re.escape(lit), ans) is not None)
        # The distance is the least edit distance from the literal to any substring (brute force).
        want = min(_levenshtein(lit, ans[i:j]) for i in range(len(ans) + 1) for j in range(i, len(ans) + 1))
        assert got["distance"] == want and _levenshtein(lit, got["closest"]) == want and got["closest"] in ans


def test_arms_agree_and_the_restored_arm_prefills_only_the_question(tiny_target, tmp_path):
    t = build_target(TargetOptions(model=tiny_target, threads=2))
    report = run(NeedleConfig(lengths=(700,), depths=(0.0, 60.0), out=tmp_path / "r"), t, say=lambda m: None,
                 progress=False)
    rep = json.loads(report.read_text())
    validate_report(rep)
    res = rep["results"]
    assert res["cells_done"] == 2 and res["arms_agree"] == 2 and res["arms_differ"] == []
    for c in res["cells"]:
        cold, warm = c["arms"]["cold"], c["arms"]["restored"]
        assert cold["prefill_tokens"] == c["context_tokens"]
        assert warm["reused"] == c["question_position"]
        assert warm["prefill_tokens"] == c["context_tokens"] - c["question_position"]
        assert cold["answer"] == warm["answer"]
        assert cold["found"] == ("KESTREL-77" in cold["answer"])
    lines = (tmp_path / "r" / "cells.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["L700-d0", "L700-d60"]
    assert (tmp_path / "r" / "needle.png").read_bytes()[:4] == b"\x89PNG"


def _cli_args(tiny_target, out):
    return [sys.executable, "-m", "ds4kit", "probe", "needle", "-m", str(tiny_target), "--lengths", "400,700",
            "--depths", "0,25,50,75,100", "-q", "-t", "1", "--max-tokens", "6", "--out", str(out)]


def _env():
    return {**os.environ, "PYTHONPATH": str(REPO)}


def test_kill_9_mid_grid_loses_no_finished_cell_and_resume_finishes(tiny_target, tmp_path):
    out = tmp_path / "killed"
    log = out / "cells.jsonl"
    proc = subprocess.Popen(_cli_args(tiny_target, out), env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_text().count("\n") >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the grid finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = log.read_bytes()
    finished = [json.loads(x) for x in before.decode().splitlines() if x.endswith("}")]
    assert 3 <= len(finished) < 10
    resumed = subprocess.run(_cli_args(tiny_target, out) + ["--resume"], env=_env(), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {len(finished)} of 10 cells already done" in resumed.stderr
    after = log.read_text().splitlines()
    assert [json.loads(x) for x in after[:len(finished)]] == finished      # kept as they were, not rerun
    ids = [json.loads(x)["id"] for x in after]
    assert len(ids) == len(set(ids)) == 10
    # The same cells as a run never killed (greedy: the same answers).
    fresh = subprocess.run(_cli_args(tiny_target, tmp_path / "fresh"), env=_env(), capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr
    want = {c["id"]: c for c in map(json.loads, (tmp_path / "fresh" / "cells.jsonl").read_text().splitlines())}
    for c in map(json.loads, after):
        w = want[c["id"]]
        assert c["needle_position"] == w["needle_position"]
        assert c["arms"]["cold"]["ids"] == w["arms"]["cold"]["ids"] and c["arms_agree"] is True
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep)
    assert rep["results"]["cells_done"] == 10


def test_resume_with_other_settings_or_bad_flags_is_refused(tiny_target, tmp_path):
    out = tmp_path / "r"
    ok = CliRunner().invoke(main, ["probe", "needle", "-m", str(tiny_target), "--lengths", "400", "--depths", "50",
                                   "-q", "--max-tokens", "4", "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    cells = (out / "cells.jsonl").read_bytes()
    r = CliRunner().invoke(main, ["probe", "needle", "-m", str(tiny_target), "--lengths", "400", "--depths", "60",
                                  "-q", "--max-tokens", "4", "--resume", "--out", str(out)])
    assert r.exit_code == 2 and "--resume" in r.output and "settings" in r.output
    assert (out / "cells.jsonl").read_bytes() == cells
    for flags, name in ((["--lengths", "2x"], "--lengths"), (["--depths", "120"], "--depths"),
                        (["--arms", "restored"], "--arms"), (["--suite", "nope"], "--suite")):
        r = CliRunner().invoke(main, ["probe", "needle", "-m", str(tiny_target), *flags, "--out", str(tmp_path / "x")])
        assert r.exit_code == 2 and name in r.output, (flags, r.output)
    r = CliRunner().invoke(main, ["probe", "needle", "-m", str(tiny_target), "--out", str(out)])
    assert r.exit_code == 2 and "already holds a report" in r.output
