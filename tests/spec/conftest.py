"""A tiny synthetic target with its DSpark drafter (real DeepSeek vocabulary, random weights)."""
import pytest

from ds4kit.engine import Drafter, Model


@pytest.fixture(scope="session")
def spec_files(tmp_path_factory):
    from ds4kit.synth import preset, write_drafter, write_target

    cfg = preset("tiny")
    d = tmp_path_factory.mktemp("spec")
    t, dr = d / "target.gguf", d / "drafter.gguf"
    write_target(t, cfg, seed=5)
    write_drafter(dr, cfg, seed=5)
    return t, dr


@pytest.fixture(scope="session")
def spec_model(spec_files):
    return Model.load(spec_files[0], threads=2)


@pytest.fixture(scope="session")
def spec_drafter(spec_files, spec_model):
    return Drafter.load(spec_files[1], spec_model)


@pytest.fixture(scope="session")
def spec_prompt(spec_model):
    return spec_model.encode("<｜begin▁of▁sentence｜><｜User｜>Count from one to twenty.<｜Assistant｜></think>")
