"""No reader of ours tracebacks on a bad file: `report show`, schema validation, items.jsonl,
thermal samples and the sha256 cache each give one clear line (and show what can be shown)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.reports import ItemLog, SchemaError, start_run, validate_report


def show(folder):
    return CliRunner().invoke(main, ["report", "show", str(folder)])


@pytest.mark.parametrize("doc, words", [
    ([], "a JSON array"),
    ("x", "a JSON string"),
    (3, "a JSON number"),
    (None, "a JSON null"),
])
def test_show_refuses_a_report_that_is_not_an_object(tmp_path, doc, words):
    (tmp_path / "report.json").write_text(json.dumps(doc))
    res = show(tmp_path)
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), repr(res.exception)
    assert "not a ds4kit report" in res.output and words in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_show_refuses_invalid_json_in_one_line(tmp_path):
    (tmp_path / "report.json").write_text('{"kind": ')
    res = show(tmp_path)
    assert res.exit_code == 1 and "not valid JSON" in res.output and isinstance(res.exception, SystemExit)


@pytest.mark.parametrize("doc, shown", [
    ({}, ["INVALID", "no 'kind'"]),
    ({"kind": "generate", "warnings": [{"message": "m"}]}, ["INVALID", "malformed entry", "m"]),
    ({"kind": "generate", "results": [1, 2]}, ["INVALID", "[1, 2]"]),
    ({"kind": "generate", "manifest": [], "warnings": "w", "error": "boom", "files": [1], "interrupt": 5},
     ["INVALID", "boom", "files (malformed)"]),
    ({"kind": ["generate"]}, ["INVALID", "unknown report kind"]),
    ({"kind": "../../etc/passwd"}, ["INVALID", "unknown report kind"]),
    ({"kind": "model-hash", "manifest": {"ds4kit": "x", "host": 3, "model": [1]}, "error": {"type": 1}}, ["INVALID"]),
])
def test_show_survives_any_shape(tmp_path, doc, shown):
    (tmp_path / "report.json").write_text(json.dumps(doc))
    res = show(tmp_path)
    assert res.exit_code == 0 and res.exception is None, repr(res.exception)
    for text in shown:
        assert text in res.output, res.output


def test_show_prints_markup_like_text_as_is(tmp_path):
    run = start_run("model-hash", tmp_path / "r", quiet_warnings=True)
    run.warn("code-[x]", "message with [bold]brackets[/bold] and [Errno 2]")
    run.finish({"path": "/x [y]", "size_bytes": 7, "mtime_ns": 0, "sha256": "b" * 64, "cached": False})
    res = show(tmp_path / "r")
    assert res.exit_code == 0, res.output
    assert "[code-[x]] message with [bold]brackets[/bold] and [Errno 2]" in res.output
    assert "/x [y]" in res.output


@pytest.mark.parametrize("doc", [[], "x", None, 5])
def test_validate_report_raises_schema_error_for_any_shape(doc):
    with pytest.raises(SchemaError):
        validate_report(doc)


def test_item_log_stops_at_a_line_that_is_not_an_object(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": 1}\n{"id": [2]}\n[3]\n{"id": 4}\n')
    log = ItemLog(path)
    assert [r["id"] for r in log.read()] == [1, [2]]
    assert log.done_keys() == {1}  # an unhashable key is no key


def test_thermal_samples_reader_stops_at_a_bad_line(tmp_path):
    from ds4kit.thermal.sampler import read_samples

    path = tmp_path / "samples.jsonl"
    path.write_text('{"t": 0}\n"x"\n{"t": 1}\n')
    assert read_samples(path) == [{"t": 0}]


@pytest.mark.parametrize("cache", ["[]", '{"PATH": []}', '{"PATH": {"size": 1}}', '{"PATH": {"sha256": 5}}', "{"])
def test_sha256_cache_of_any_shape_is_rebuilt(tmp_path, monkeypatch, cache):
    import hashlib

    from ds4kit.model_hash import sha256_file

    monkeypatch.setenv("DS4KIT_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "m.bin"
    model.write_bytes(b"abc")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "sha256-cache.json").write_text(cache.replace("PATH", str(model.resolve())))
    res = sha256_file(model)
    assert res.sha256 == hashlib.sha256(b"abc").hexdigest() and not res.cached
    assert sha256_file(model).cached


@pytest.mark.parametrize("text", ["[]", '"x"', "{}", '{"name": 5}', "\xff\xfe", "{"])
def test_model_card_of_any_shape_is_a_card_error(tmp_path, text):
    from ds4kit.cards.loader import CardError, load_card

    path = tmp_path / "card.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(CardError, match=str(path)):
        load_card(path)
