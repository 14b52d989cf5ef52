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
