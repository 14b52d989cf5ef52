"""Layer capture: Session(capture_layers=..., capture_at="input"|"output") records, for every
token, the mean of the 4 hyper-connection streams at the input or output of chosen layers
(the DSpark drafter's features). Checked against the float64 reference's own streams
(tests/reference traces X_in / X_out per layer), and bitwise against itself across call
shapes: verify, batched prefill and one-by-one decode give the same features.

Tolerance: with the roundings off (llama.cpp's semantics) the engine's streams are float32
versions of the reference's; per token and layer max|got - want| <= 2e-4 * max|want|, the
same bound the logits meet (test_engine_forward_reference.py)."""
import numpy as np
import pytest

from engine_fixtures import ref_tiny_path, reference_weights, tokens  # sets sys.path first
from ds4_numpy_reference import ReferenceSession  # noqa: E402  (tests/reference)

from ds4kit import _engine
from ds4kit.engine import Model

TOL = 2e-4


@pytest.fixture(scope="module")
def model():
    return Model.load(ref_tiny_path(), threads=2)


@pytest.fixture(scope="module")
def reference_trace(model):
    w = reference_weights(ref_tiny_path())
    n = 140  # past a ratio-128 row and several ratio-4 rows of the reference tiny model
    toks = tokens(n, w.hp.n_vocab, 21)
    ref = ReferenceSession(w, n + 8, fp8_kv=False, indexer_fp4=False, trace=True)
    for t in toks:
        ref.step(t, want_logits=False)
    return toks, ref.trace


@pytest.mark.parametrize("at", ["input", "output"])
def test_capture_matches_the_float64_reference(model, reference_trace, at):
    toks, trace = reference_trace
    n_layer = model.hparams["n_layer"]
    layers = list(range(n_layer))
    s = model.session(len(toks) + 8, fp8_kv=False, indexer_fp4=False, capture_layers=layers, capture_at=at)
    s.prefill(toks, mode="exact")
    got = s.captured()
    assert got.shape == (len(toks), n_layer, model.hparams["n_embd"]) and got.dtype == np.float32
    key = "X_in" if at == "input" else "X_out"
    worst = 0.0
    for i in range(len(toks)):
        for k, il in enumerate(layers):
            want = trace[il][i][key].mean(axis=0)
            err = float(np.max(np.abs(got[i, k].astype(np.float64) - want))) / float(np.max(np.abs(want)))
            worst = max(worst, err)
    assert worst <= TOL, f"worst relative error {worst:.3g}"
    # The capture is not some other layer's: layer 0's input is the embedding, the last output differs.
    if at == "input":
        assert np.array_equal(got[:, 0], np.stack([trace[0][i]["X_in"][0] for i in range(len(toks))]).astype(np.float32))


def test_input_of_a_layer_is_the_output_of_the_one_before(model):
    V = model.hparams["n_vocab"]
    toks = tokens(40, V, 22)
    a = model.session(64, capture_layers=[1, 2], capture_at="input")
    b = model.session(64, capture_layers=[0, 1], capture_at="output")
    a.prefill(toks, mode="batched")
    b.prefill(toks, mode="batched")
    assert np.array_equal(a.captured(), b.captured())


def test_capture_is_the_same_for_verify_prefill_and_decode(model):
    V = model.hparams["n_vocab"]
    prompt, cont = tokens(70, V, 23), tokens(9, V, 24)
    layers = [0, model.hparams["n_layer"] - 1]
    one = model.session(128, capture_layers=layers)
    one.prefill(prompt, mode="exact")
    first = one.captured()
    by_decode = []
    for t in cont:
        one.decode(t)
        by_decode.append(one.captured()[0])
    two = model.session(128, capture_layers=layers)
    two.prefill(prompt, mode="batched")
    assert np.array_equal(two.captured(), first)      # batched prefill == exact prefill
    two.verify(cont)
    assert np.array_equal(two.captured(), np.stack(by_decode))  # verify rows == decode rows


def test_capture_arguments_are_checked(model):
    n_layer = model.hparams["n_layer"]
    with pytest.raises(_engine.ArgumentError, match="capture layer"):
        model.session(16, capture_layers=[n_layer])
    with pytest.raises(_engine.ArgumentError, match="capture_at"):
        model.session(16, capture_layers=[0], capture_at="middle")
    plain = model.session(16)
    plain.decode(1)
    assert plain.captured().shape == (0, 0, model.hparams["n_embd"])
