"""Snapshot files: save a session's state, load it (in this process or another), restore it into
a fresh session and continue: the logits are bitwise those of a session that never stopped. A
file of another model, another format version, a truncated or corrupt file are refused with an
error saying which; restoring into a session with other options is refused by the session; a
write is atomic (an interrupted save leaves no file under the final name)."""
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine_fixtures import engine_case_path, synth_tiny_path, tokens

from ds4kit import _engine
from ds4kit.engine import Model, Snapshot
from ds4kit.engine.snapshot_file import FORMAT_VERSION, SnapshotFileError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model():
    return Model.load(synth_tiny_path(), threads=2)


@pytest.fixture(scope="module")
def saved(model, tmp_path_factory):
    """A 150-token state (ratio-4 and ratio-128 rows, a wrapped ring, after a rewind) on disk, and
    the logits a session that never stopped gives next."""
    V = model.hparams["n_vocab"]
    prompt, detour, cont = tokens(150, V, 51), tokens(5, V, 52), tokens(6, V, 53)
    s = model.session(300)
    s.prefill(prompt, "batched")
    s.verify(detour)
    s.rewind(5)
    path = tmp_path_factory.mktemp("snap") / "turn.ds4snap"
    s.snapshot().save(path)
    want = np.stack([s.decode(t) for t in cont])
    return path, prompt, cont, want


def test_load_restore_continue_is_bitwise_never_stopping(model, saved):
    path, prompt, cont, want = saved
    snap = Snapshot.load(path, model)
    assert snap.pos == 150 and snap.tokens == prompt
    assert snap.options == {"max_ctx": 300, "fp8_kv": True, "indexer_fp4": True}
    fresh = model.session(300)
    fresh.restore(snap)
    assert fresh.pos == 150 and fresh.tokens == prompt
    assert np.array_equal(np.stack([fresh.decode(t) for t in cont]), want)
    # The loaded state keeps its rewind window (high-water mark) too.
    fresh.rewind(6)
    assert fresh.pos == 150


def test_load_in_another_process(model, saved, tmp_path):
    path, prompt, cont, want = saved
    out = tmp_path / "logits.npy"
    code = (f"import numpy as np; from ds4kit.engine import Model, Snapshot\n"
            f"m = Model.load({str(synth_tiny_path())!r}, threads=1)\n"
            f"s = m.session(300); s.restore(Snapshot.load({str(path)!r}, m))\n"
            f"np.save({str(out)!r}, np.stack([s.decode(t) for t in {cont!r}]))\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path, timeout=300)
    assert np.array_equal(np.load(out), want)  # 1 thread there, 2 here: the same bits


def test_other_options_are_refused_by_the_session(model, saved):
    path = saved[0]
    snap = Snapshot.load(path, model)
    for other in (model.session(300, fp8_kv=False), model.session(200)):
        with pytest.raises(_engine.ArgumentError, match="session options"):
            other.restore(snap)


def test_another_model_is_refused(saved):
    other = Model.load(engine_case_path("tiny"), threads=1)
    with pytest.raises(SnapshotFileError, match="snapshot of another model"):
        Snapshot.load(saved[0], other)


def _variant(src: Path, dst: Path, edit) -> Path:
    data = bytearray(src.read_bytes())
    edit(data)
    dst.write_bytes(bytes(data))
    return dst


def test_bad_files_are_refused_by_name(model, saved, tmp_path):
    path = saved[0]
    cases = {
        "not a ds4kit snapshot": lambda d: d.__setitem__(slice(0, 8), b"GGUFxxxx"),
        f"format version 99; this ds4kit reads version {FORMAT_VERSION}":
            lambda d: d.__setitem__(slice(8, 12), struct.pack("<I", 99)),
        "truncated": lambda d: d.__delitem__(slice(len(d) - 1000, len(d))),
        "longer than its header says": lambda d: d.extend(b"\0" * 8),
        "checksum does not match": lambda d: d.__setitem__(len(d) // 2, d[len(d) // 2] ^ 0x01),
        "corrupt snapshot header": lambda d: d.__setitem__(slice(16, 20), b"\xff\xfe\xfd\xfc"),
    }
    for i, (message, edit) in enumerate(cases.items()):
        bad = _variant(path, tmp_path / f"bad{i}.ds4snap", edit)
        with pytest.raises(SnapshotFileError, match=message):
            Snapshot.load(bad, model)
    with pytest.raises(SnapshotFileError, match="cannot read"):
        Snapshot.load(tmp_path / "missing.ds4snap", model)


def test_image_that_does_not_fit_the_model_is_refused(model, saved):
    from ds4kit.engine.snapshot_file import read_snapshot

    f = read_snapshot(saved[0], model)
    h = f["header"]
    arrays = list(f["arrays"])
    arrays[1] = arrays[1][:-1]
    with pytest.raises(_engine.ArgumentError, match="array 1 .* holds"):
        model._m.snapshot_from_image(300, True, True, h["pos"], h["hwm"], [int(t) for t in f["tokens"]], arrays)
    with pytest.raises(_engine.ArgumentError, match="token ids for a state at position"):
        model._m.snapshot_from_image(300, True, True, h["pos"], h["hwm"], [1, 2], f["arrays"])


def test_save_is_atomic(model, tmp_path, monkeypatch):
    # A save that fails half-way (here: the disk "fills" after the header) leaves nothing under
    # the final name and no temporary file behind; an earlier good file stays as it was.
    s = model.session(64)
    s.prefill([5, 6, 7, 8, 9], "batched")
    path = tmp_path / "a.ds4snap"
    s.snapshot().save(path)
    good = path.read_bytes()
    s.decode(10)

    import ds4kit.engine.snapshot_file as sf

    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f, self.n = f, 0

        def write(self, b):
            self.n += 1
            if self.n > 2:
                raise OSError(28, "No space left on device")
            return self.f.write(b)

        def __getattr__(self, k):
            return getattr(self.f, k)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

    monkeypatch.setattr(sf.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match="No space"):
        s.snapshot().save(path)
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.ds4snap"]
