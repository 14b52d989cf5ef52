"""The engine against llama.cpp (llama-cpp-python 0.3.36), position by position, on the same GGUF.

llama.cpp's deepseek4 (G in ds4-model.md section 8) neither rounds KV to FP8 nor applies the
indexer's FP4 round trip. So: with those roundings switched off the engine must agree with
llama.cpp within the tolerance below; with them on (D's semantics, our default) it must differ by
more than that tolerance, which shows the switch is real and the difference is the documented
one, not noise.

Weights are F32 everywhere: on quantised files llama.cpp also quantises the activations of its
matmuls (Q8_1), which is a third, undocumented difference we do not want in this test.

Tolerance: 1e-2 absolute on logits of magnitude ~4. llama.cpp already differs from the float64
reference by ~4e-4 at position 0 and accumulates float32 noise over 43-layer-like depth; 1e-2 is
the bound the float64 reference itself meets against llama.cpp on this configuration
(tests/reference). Near ties: where a discrete top-k choice (routed experts, indexer rows) has a
margin below 2e-3 in the float64 reference, llama.cpp's float32 may pick the other side, and every
later position attends to the changed KV. So every position must agree within the tolerance up to
the first disagreement, that first disagreement (if any) must sit at a near-tie position of the
float64 reference's own trace, and at least half the tokens must be covered before it. Argmax
must agree wherever the top-2 margin exceeds 2e-2 over the covered positions.
"""
import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))
from ds4_ref_engine_configs import ENGINE_CASES, config_of  # noqa: E402
from ds4_ref_llama_compare import decision_margins, import_llama_cpp, llama_logits  # noqa: E402
from ds4_ref_weights import load_weights  # noqa: E402
from ds4_numpy_reference import ReferenceSession  # noqa: E402

from ds4kit import _engine  # noqa: E402
from ds4kit.synth import write_target  # noqa: E402
from ds4kit.synth.config import GROUPS  # noqa: E402

TOL = 1e-2
TIE_MARGIN = 2e-3
ARGMAX_MARGIN = 2e-2
N_TOKENS = 200


@pytest.fixture(scope="module")
def case_file(tmp_path_factory):
    case = next(c for c in ENGINE_CASES if c.name == "window128")
    path = tmp_path_factory.mktemp("engine_llama") / "window128-f32.gguf"
    write_target(path, config_of(case), seed=case.seed, types={g: "F32" for g in GROUPS})
    return path


@pytest.fixture(scope="module")
def tokens(case_file):
    rng = np.random.default_rng(11)
    return rng.integers(3, 128000, size=N_TOKENS).tolist()


@pytest.fixture(scope="module")
def llama(case_file, tokens):
    llama_cpp = import_llama_cpp()
    if llama_cpp is None:
        pytest.skip("DS4KIT_ALLOW_MISSING_LLAMA=1 and llama_cpp is missing")
    return llama_logits(llama_cpp, case_file, tokens)


@pytest.fixture(scope="module")
def margins(case_file, tokens) -> np.ndarray:
    """Per position, the smallest top-k decision margin of the float64 reference."""
    w = load_weights(str(case_file))
    ref = ReferenceSession(w, len(tokens), fp8_kv=False, indexer_fp4=False, trace=True)
    for t in tokens:
        ref.step(t, want_logits=False)
    return decision_margins(w, ref)


def engine_logits(path, tokens, roundings: bool) -> np.ndarray:
    model = _engine.Model(str(path), threads=2)
    s = model.session(len(tokens), fp8_kv=roundings, indexer_fp4=roundings)
    return np.stack([s.decode(t) for t in tokens]).astype(np.float64)


@pytest.mark.llama
def test_engine_matches_llama_cpp_with_its_semantics(case_file, tokens, llama, margins):
    ours = engine_logits(case_file, tokens, roundings=False)
    diff = np.max(np.abs(ours - llama), axis=1)
    off = np.where(diff >= TOL)[0]
    comparable = int(off[0]) if off.size else len(tokens)
    if off.size:
        assert margins[comparable] < TIE_MARGIN, (
            f"position {comparable}: max |engine - llama.cpp| = {diff[comparable]:.3e} (tolerance {TOL}) "
            f"where the reference's closest top-k decision has margin {margins[comparable]:.2e}: not a near tie")
    assert comparable >= len(tokens) // 2, f"only {comparable} positions agree before a near-tie flip"
    ours, llama = ours[:comparable], llama[:comparable]
    srt = np.sort(llama, axis=1)
    decisive = (srt[:, -1] - srt[:, -2]) > ARGMAX_MARGIN
    agree = np.argmax(ours, axis=1) == np.argmax(llama, axis=1)
    assert agree[decisive].all(), f"argmax differs at decisive positions {np.where(decisive & ~agree)[0].tolist()}"
    assert decisive.sum() > comparable // 2  # the check is not vacuous


@pytest.mark.llama
def test_fp8_and_fp4_roundings_are_a_real_difference_from_llama_cpp(case_file, tokens, llama):
    ours = engine_logits(case_file, tokens, roundings=True)
    assert np.max(np.abs(ours - llama)) > 5 * TOL
