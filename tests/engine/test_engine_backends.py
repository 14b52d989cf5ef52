"""Backends by name (cpu, cuda, hip, auto), from C++ and from Python: a backend this build
lacks is a clear error naming the build switch, never a silent CPU fallback; an unknown name
is refused before any file is read; `auto` takes the GPU only when one is built and usable."""
import pytest

from engine_fixtures import synth_tiny_path

from ds4kit import _engine
from ds4kit.engine import BACKENDS, Model, available_backends


def test_available_backends_lists_every_name_with_a_reason():
    av = available_backends()
    assert set(av) == {"cpu", "cuda", "hip"}
    assert av["cpu"] == "ok"
    built = _engine.build_info["gpu_backend"]
    for kind in ("cuda", "hip"):
        if kind != built:
            assert f"DS4KIT_GPU={kind}" in av[kind] and "not built" in av[kind]
        else:
            assert av[kind]  # "ok", or why no device can be used here


@pytest.mark.parametrize("kind", ["cuda", "hip"])
def test_a_backend_not_built_names_its_build_switch(kind):
    if _engine.build_info["gpu_backend"] == kind:
        pytest.skip(f"this build has the {kind} backend (tests/gpu covers it)")
    with pytest.raises(_engine.UnsupportedError, match=f"DS4KIT_GPU={kind}"):
        Model.load(synth_tiny_path(), backend=kind)
    with pytest.raises(_engine.UnsupportedError, match=f"the {kind} backend is not built"):
        _engine.Model(str(synth_tiny_path()), backend=kind)


def test_unknown_names_are_refused_before_loading(tmp_path):
    not_a_model = tmp_path / "x.gguf"
    not_a_model.write_bytes(b"not a gguf")
    with pytest.raises(ValueError, match="'tpu' is not one of auto, cpu, cuda, hip"):
        Model.load(not_a_model, backend="tpu")  # the name is checked first: no GGUF error
    with pytest.raises(_engine.ArgumentError, match="'tpu' is not one of"):
        _engine.Model(str(synth_tiny_path()), backend="tpu")
    assert BACKENDS == ("auto", "cpu", "cuda", "hip")


def test_cpu_and_auto():
    m = Model.load(synth_tiny_path(), backend="cpu", threads=1)
    assert m.backend_kind == "cpu" and m.backend.startswith("cpu(") and m.threads == 1
    a = Model.load(synth_tiny_path(), backend="auto", threads=1)
    gpu = _engine.build_info["gpu_backend"]
    if gpu in ("cuda", "hip") and available_backends()[gpu] == "ok":
        assert a.backend_kind == gpu
    else:
        assert a.backend_kind == "cpu"
