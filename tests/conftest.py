"""Shared test setup. Tests import ds4kit from PYTHONPATH (scripts/test sets it to the
source tree after an in-place engine build) or from an installed wheel."""

import pytest


@pytest.fixture(scope="session")
def tiny_target(tmp_path_factory):
    """The synth `tiny` preset target (real tokenizer, every compression ratio), written once."""
    from ds4kit.synth import preset, write_target

    path = tmp_path_factory.mktemp("tiny_target") / "tiny.gguf"
    write_target(path, preset("tiny"), seed=0)
    return path


# A tiny synthetic target with its DSpark drafter (real DeepSeek vocabulary, random weights):
# speculative decoding and the identity probe.
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
    from ds4kit.engine import Model

    return Model.load(spec_files[0], threads=2)


@pytest.fixture(scope="session")
def spec_drafter(spec_files, spec_model):
    from ds4kit.engine import Drafter

    return Drafter.load(spec_files[1], spec_model)


@pytest.fixture(scope="session")
def spec_prompt(spec_model):
    return spec_model.encode("<｜begin▁of▁sentence｜><｜User｜>Count from one to twenty.<｜Assistant｜></think>")


@pytest.fixture(scope="session")
def small_q8(tmp_path_factory):
    """`small` (8 layers, n_embd 256), every matrix Q8_0, written once: llama.cpp's batched rows
    differ from its one-token rows here and flip argmaxes (on `tiny` they differ without a flip).
    probe margins and probe identity run llama.cpp on it."""
    from llama_required import llama_cpp_or_fail
    from ds4kit.synth import GROUPS, preset, write_target

    llama_cpp_or_fail()
    path = tmp_path_factory.mktemp("small_q8") / "small-q8.gguf"
    write_target(path, preset("small"), seed=0, types={g: "Q8_0" for g in GROUPS})
    return path
