"""`ds4kit generate --messages F --cache [--cache-dir D]`: every missing reply of the conversation is
generated; with the cache, later turns reuse the earlier ones and the replies are identical to the
cache-off run; the report and turns.jsonl carry each turn's prompt tokens, expected and actual
reuse; the disk tier serves a second run; cache flags without --messages are refused before loading."""
import json

from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.reports.schema import validate_report

CONV = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Name a colour."},
    {"role": "user", "content": "Another one."},
    {"role": "assistant", "content": "Blue."},
    {"role": "user", "content": "And a number?"},
]


def _run(tiny_target, tmp_path, name, *extra):
    msgs = tmp_path / "conv.json"
    msgs.write_text(json.dumps(CONV))
    out = tmp_path / name
    res = CliRunner().invoke(main, ["generate", "-m", str(tiny_target), "--messages", str(msgs), "--greedy",
                                    "--max-tokens", "8", "--prefill", "batched", "-q", "--out", str(out),
                                    *[str(e) for e in extra]])
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    validate_report(rep)
    return rep["results"], out


def test_cache_on_matches_cache_off_and_reuses(tiny_target, tmp_path):
    off, _ = _run(tiny_target, tmp_path, "off")
    on, out = _run(tiny_target, tmp_path, "on", "--cache")
    # Replies for messages 1 and 4: message 2 is answered by the file (message 3).
    assert [t["message_index"] for t in on["turns"]] == [1, 4] == [t["message_index"] for t in off["turns"]]
    assert [t["ids"] for t in on["turns"]] == [t["ids"] for t in off["turns"]]
    assert on["output"]["ids"] == on["turns"][-1]["ids"]
    assert off["cache"]["enabled"] is False and on["cache"]["enabled"] is True
    assert all(t["actual_reuse"] == 0 for t in off["turns"])
    assert on["turns"][0]["actual_reuse"] == 0
    for t in on["turns"][1:]:
        assert 0 < t["actual_reuse"] <= t["expected_reuse"] <= t["prompt_tokens"]
    rows = [json.loads(x) for x in (out / "turns.jsonl").read_text().splitlines()]
    assert [r["actual_reuse"] for r in rows] == [t["actual_reuse"] for t in on["turns"]]


def test_disk_tier_serves_a_second_run(tiny_target, tmp_path):
    d = tmp_path / "cache"
    first, _ = _run(tiny_target, tmp_path, "a", "--cache-dir", d)
    assert list(d.glob("*.ds4snap"))
    second, _ = _run(tiny_target, tmp_path, "b", "--cache-dir", d)
    assert second["turns"][0]["actual_reuse"] > 0 and second["turns"][0]["reuse_tier"] == "disk"
    assert [t["ids"] for t in second["turns"]] == [t["ids"] for t in first["turns"]]


def test_cache_flags_need_messages(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"not a gguf")
    res = CliRunner().invoke(main, ["generate", "-m", str(bad), "-p", "hi", "--cache"])
    assert res.exit_code == 2 and "--cache" in res.output and "--messages" in res.output, res.output
    f = tmp_path / "file"
    f.write_text("x")
    msgs = tmp_path / "m.json"
    msgs.write_text(json.dumps(CONV))
    res = CliRunner().invoke(main, ["generate", "-m", str(bad), "--messages", str(msgs), "--cache-dir", str(f)])
    assert res.exit_code == 2 and "--cache-dir" in res.output, res.output
