"""report diff for the probes: identity (arms, tokens, throughput) and margins (rows, flips)."""
import json
from pathlib import Path

from ds4kit.probes.identity.job import IdentityConfig, run
from ds4kit.reports.diff import diff_reports, render_markdown
from ds4kit.targets import TargetOptions, build_target

EXAMPLES = Path(__file__).resolve().parents[2] / "reports" / "examples"


def test_margins_diff_pairs_widths_from_the_reports():
    a, b = EXAMPLES / "probe-margins-embedded-small-q8-t2", EXAMPLES / "probe-margins-llama-small-q8-t2"
    d = diff_reports(a, b)
    ra, rb = (json.loads((x / "report.json").read_text())["results"] for x in (a, b))
    assert d["diff"]["verdict"] == {"a": ra["verdict"], "b": rb["verdict"]}
    assert d["diff"]["overall"]["flips"] == {"a": ra["flips"], "b": rb["flips"]}
    w4 = next(w for w in d["diff"]["per_width"] if w["width"] == 4)
    want = next(w for w in rb["per_width"] if w["width"] == 4)
    assert w4["max_abs_dlogit"]["b"] == want["max_abs_dlogit"] and w4["bitwise_equal_rows"]["a"] == 192
    assert "| 4 | 192/192 |" in render_markdown(d)


def test_identity_diff_of_two_runs_sees_the_same_tokens(spec_files, tmp_path):
    target, drafter = spec_files
    outs = []
    for k in range(2):
        t = build_target(TargetOptions(model=target, threads=2, drafter=drafter))
        outs.append(Path(run(IdentityConfig(suite="quick", arms="target-only,dspark-auto,scripted-a50", max_tokens=8,
                                            out=tmp_path / f"r{k}"), t)).parent)
    d = diff_reports(*outs)["diff"]
    assert d["verdict"] == {"a": "identical", "b": "identical"} and d["suite_same"]
    assert {r["arm"] for r in d["arms"]} == {"target-only", "dspark-auto", "scripted-a50"}
    assert all(r["same_tokens"] for r in d["arms"])
    assert all(r["tok_s"]["n_a"] == 2 for r in d["arms"])  # two timed items (warmup excluded)


def _copy_report(src: Path, dst: Path, edit) -> Path:
    import shutil

    shutil.copytree(src, dst)
    rep = json.loads((dst / "report.json").read_text())
    edit(rep["results"])
    (dst / "report.json").write_text(json.dumps(rep))
    return dst


def test_needle_diff_names_the_cells_that_changed(tmp_path):
    src = EXAMPLES / "probe-needle-medium"

    def find_one(r):
        c = r["cells"][2]
        c["arms"]["cold"]["found"] = True
        r["score"]["cold"]["found"] += 1
        r["score"]["cold"]["rate"] = r["score"]["cold"]["found"] / r["score"]["cold"]["cells"]
    b = _copy_report(src, tmp_path / "b", find_one)
    d = diff_reports(src, b)["diff"]
    cid = json.loads((src / "report.json").read_text())["results"]["cells"][2]["id"]
    assert d["arms"]["cold"]["found_in_b_only"] == [cid] and d["arms"]["cold"]["found_in_a_only"] == []
    assert d["arms"]["restored"]["found_in_b_only"] == [] and d["paired_cells"] == 6
    assert d["arms"]["cold"]["mcnemar_p"] == 1.0  # one discordant cell proves nothing


def test_prefix_cache_diff_pairs_turns(tmp_path):
    src = EXAMPLES / "probe-prefix-cache-medium" / "seed-7k"

    def lose_reuse(r):
        r["turns"][1]["actual_reuse"] = 0
    b = _copy_report(src, tmp_path / "b", lose_reuse)
    d = diff_reports(src, b)["diff"]
    t = next(x for x in d["turns"] if x["id"] == "main/2")
    assert t["actual_reuse"]["a"] == t["expected_reuse"]["a"] and t["actual_reuse"]["b"] == 0


def test_every_report_kind_has_a_differ():
    from ds4kit.reports.diff import differs
    from ds4kit.reports.schema import known_kinds

    assert set(known_kinds()) == set(differs())


def test_model_info_diff_names_the_fields_that_differ(tmp_path, tiny_target):
    from click.testing import CliRunner

    from ds4kit.cli import main
    from ds4kit.synth import preset, write_target

    other = tmp_path / "other.gguf"
    write_target(other, preset("tiny").replace(n_layer=preset("tiny").n_layer + 1), seed=0)
    outs = []
    for k, model in enumerate((tiny_target, other)):
        out = tmp_path / f"info{k}"
        res = CliRunner().invoke(main, ["model", "info", str(model), "--out", str(out)])
        assert res.exit_code == 0, res.output
        outs.append(out)
    d = diff_reports(*outs)["diff"]
    paths = {c["path"] for c in d["fields"]}
    assert "hparams.block_count" in paths and "hparams.attention.compress_ratios" in paths, sorted(paths)[:20]
    same = diff_reports(outs[0], outs[0])["diff"]
    assert same["changed"] == 0 and "No field" in render_markdown(diff_reports(outs[0], outs[0]))
