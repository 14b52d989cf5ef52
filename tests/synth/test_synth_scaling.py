"""Weights are scaled so activations stay O(1): every projection maps a unit-RMS input to a
unit-RMS output, and the HC mixing inputs stay in a range where sigmoid/Sinkhorn are well conditioned.
Checked on decoded weights read back with gguf-py."""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGUFReader, quants

from ds4kit.synth import write_target

from conftest import BLOCK256

# Tensors that are not applied as y = W x to a normalised input
NOT_PROJECTIONS = ("token_embd", "_ape.", "exp_probs_b", "tid2eid")


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    path = write_target(tmp_path_factory.mktemp("synth_scaling") / "s.gguf", BLOCK256, seed=9,
                        types={"experts": "Q4_K", "attn": "IQ2_XXS", "shared": "Q2_K"}).path
    out = {}
    for t in GGUFReader(path).tensors:
        ne = tuple(int(s) for s in t.shape)
        data = np.asarray(t.data) if t.tensor_type.name == "I32" else quants.dequantize(np.asarray(t.data), t.tensor_type)
        out[t.name] = data.reshape(tuple(reversed(ne))).astype(np.float64)
    return out


def test_every_projection_keeps_unit_rms(decoded):
    rng = np.random.default_rng(0)
    checked = 0
    for name, w in decoded.items():
        if w.ndim < 2 or "norm" in name or any(k in name for k in NOT_PROJECTIONS):
            continue
        mats = w if w.ndim == 3 else w[None]          # experts: [X, out, in]
        x = rng.standard_normal((mats.shape[-1], 64))  # 64 unit-RMS inputs of the right width (ggml ne0)
        y = mats @ x
        rms = float(np.sqrt(np.mean(y ** 2)))
        assert 0.7 < rms < 1.4, f"{name}: output RMS {rms:.3f} for unit-RMS input"
        checked += 1
    assert checked >= 20


def test_hc_mixing_inputs_are_well_conditioned(decoded):
    rng = np.random.default_rng(1)
    E = BLOCK256.n_embd
    for il in range(BLOCK256.n_layer):
        for sub in ("attn", "ffn"):
            p = f"blk.{il}.hc_{sub}_"
            fn, scale, base = decoded[p + "fn.weight"], decoded[p + "scale.weight"], decoded[p + "base.weight"]
            x = rng.standard_normal(4 * E)
            m = fn @ (x / np.sqrt(np.mean(x ** 2)))         # mixes for an RMS-normalised flattened state
            pre = scale[0] * m[:4] + base[:4]
            comb = (scale[2] * m[8:] + base[8:]).reshape(4, 4)
            assert np.abs(pre).max() < 4, p                 # sigmoid not saturated
            assert np.abs(comb).max() < 8, p                # softmax rows not one-hot
            assert (np.argmax(comb, axis=1) == np.arange(4)).mean() >= 0.5, p  # near-identity mixing


def test_sinks_and_router_bias_are_moderate(decoded):
    for name, w in decoded.items():
        if name.endswith("attn_sinks.weight"):
            assert np.abs(w).max() < 3, name
        if name.endswith("exp_probs_b.bias"):
            assert np.abs(w).max() < 0.1, name
