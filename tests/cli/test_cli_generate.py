"""`ds4kit generate` end to end on a tiny synthetic model."""
import csv
import json

import numpy as np
from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.engine import Model


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_generate_greedy_report_and_tables(tiny_target, tmp_path):
    out = tmp_path / "g"
    res = invoke("generate", "-m", tiny_target, "-p", "Hi", "--greedy", "--max-tokens", 5, "--logprobs", 3,
                 "--threads", 2, "--out", out)
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    r = rep["results"]
    assert rep["status"] == "ok" and r["output"]["n_tokens"] == 5
    assert r["sampling"]["temperature"] == 0.0 and r["sampling"]["source"]["temperature"] == "--greedy"
    assert r["sampling"]["source"]["top_p"] == "card"
    # The prompt went through the chat template with thinking off.
    assert r["prompt"]["text"].startswith("<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜></think>")
    # Independent check: the same prompt decoded greedily through the session API.
    rt = Model.load(tiny_target, threads=1)
    s = rt.session(max_ctx=4096)
    logits = s.prefill(r["prompt"]["ids"], "exact")
    want = []
    for _ in range(5):
        want.append(int(np.argmax(logits)))
        logits = s.decode(want[-1])
    assert r["output"]["ids"] == want
    rows = list(csv.DictReader(open(out / "tokens.csv")))
    assert [int(x["token"]) for x in rows] == want
    lp = [json.loads(line) for line in open(out / "logprobs.jsonl")]
    assert len(lp) == 5 and all(len(x["top"]) == 3 for x in lp)
    assert r["timings"]["decode_tok_s"] > 0 and r["timings"]["prefill_tok_s"] > 0


def test_generate_raw_and_messages(tiny_target, tmp_path):
    res = invoke("generate", "-m", tiny_target, "-p", "plain text", "--raw", "--max-tokens", 2, "-q",
                 "--out", tmp_path / "raw")
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "raw" / "report.json").read_text())
    assert rep["results"]["prompt"]["text"] == "plain text"
    msgs = tmp_path / "m.json"
    msgs.write_text(json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hey"}]))
    res = invoke("generate", "-m", tiny_target, "--messages", msgs, "--effort", "low", "--max-tokens", 2, "-q",
                 "--out", tmp_path / "msg")
    assert res.exit_code == 0, res.output
    r = json.loads((tmp_path / "msg" / "report.json").read_text())["results"]
    assert r["thinking"]["enabled"] and r["thinking"]["effort"] == "low"
    assert r["prompt"]["text"].endswith("<｜Assistant｜><think>")


def test_generate_usage_errors(tiny_target, tmp_path):
    assert invoke("generate", "-m", tiny_target).exit_code == 2
    res = invoke("generate", "-m", tiny_target, "-p", "x", "--effort", "high", "--no-thinking")
    assert res.exit_code == 2 and "--effort" in res.output
    long = "word " * 300
    res = invoke("generate", "-m", tiny_target, "-p", long, "--max-ctx", 16, "--out", tmp_path / "e")
    assert res.exit_code == 2 and "--max-ctx 16" in res.output
    rep = json.loads((tmp_path / "e" / "report.json").read_text())
    assert rep["status"] == "failed"
