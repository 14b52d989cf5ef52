"""`ds4kit model hash`: sha256 equals hashlib's, is cached by (path, size, mtime), and is
recomputed when the file changes."""
import hashlib
import json
import os

from click.testing import CliRunner

from ds4kit.cli import main
from ds4kit.model_hash import sha256_file


def test_hash_matches_hashlib_and_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("DS4KIT_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "model.gguf"
    data = os.urandom(3 * 1024 * 1024 + 17)
    f.write_bytes(data)
    want = hashlib.sha256(data).hexdigest()
    first = sha256_file(f)
    assert first.sha256 == want and not first.cached
    second = sha256_file(f)
    assert second.sha256 == want and second.cached


def test_changed_file_is_rehashed_even_with_same_size(tmp_path, monkeypatch):
    monkeypatch.setenv("DS4KIT_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "m.gguf"
    f.write_bytes(b"a" * 1000)
    sha256_file(f)
    f.write_bytes(b"b" * 1000)
    st = os.stat(f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # make sure mtime moves
    res = sha256_file(f)
    assert not res.cached and res.sha256 == hashlib.sha256(b"b" * 1000).hexdigest()


def test_cli_hash_writes_report(tmp_path, monkeypatch):
    monkeypatch.setenv("DS4KIT_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "m.gguf"
    f.write_bytes(b"xyz")
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["model", "hash", str(f), "--out", str(out)])
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    assert rep["kind"] == "model-hash" and rep["status"] == "ok"
    assert rep["results"]["sha256"] == hashlib.sha256(b"xyz").hexdigest()
    assert rep["manifest"]["model"]["sha256"] == rep["results"]["sha256"]


def test_cli_hash_missing_file_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(main, ["model", "hash", str(tmp_path / "nope.gguf")])
    assert res.exit_code == 2
    assert "nope.gguf" in res.output
