"""Bytes of each planned tensor, deterministic from (seed, tensor name).

Each tensor draws from its own numpy Generator seeded by the model seed and a CRC of
its name, so a tensor's contents do not depend on which other tensors exist or on
the order they are written in.
"""
from __future__ import annotations

import zlib

import numpy as np

from ds4kit.synth import qtypes
from ds4kit.synth.config import SynthConfig
from ds4kit.synth.layout import Planned


def tensor_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), zlib.crc32(name.encode())])))


def tensor_type(t: Planned, types: dict[str, str]) -> qtypes.QType:
    return qtypes.BY_NAME[types[t.group]] if t.group else qtypes.BY_NAME[t.fixed_type]


def tensor_bytes(t: Planned, qt: qtypes.QType, cfg: SynthConfig, seed: int) -> bytes:
    rng = tensor_rng(seed, t.name)
    if t.init == "gauss":
        return qtypes.encode_gaussian(rng, t.shape, t.std, qt, what=t.name)
    values = fixed_values(t, cfg, rng)
    if qt.name == "I32":
        return np.ascontiguousarray(values, dtype="<i4").tobytes()
    return qtypes.encode_values(values, qt)


def fixed_values(t: Planned, cfg: SynthConfig, rng: np.random.Generator) -> np.ndarray:
    """Values for tensors that stay F32/I32, chosen so activations stay O(1)."""
    n = int(np.prod(t.shape))
    if t.init == "norm":
        return 1.0 + 0.05 * rng.standard_normal(n)  # RMSNorm weights near 1
    if t.init == "zero":
        return np.zeros(n)
    if t.init == "sinks":
        return rng.normal(0.0, 0.5, n)  # exp(sink) comparable to one key's weight, as in trained models
    if t.init == "hc_scale":
        return rng.uniform(0.2, 0.6, n)  # multiplies mixes ~N(0,1): sigmoid/softmax inputs stay moderate
    if t.init == "hc_base_head":
        return rng.normal(0.0, 0.3, n)
    if t.init == "hc_base":
        hc = cfg.hc_count
        pre_post = rng.normal(0.0, 0.3, 2 * hc)
        # residual mixing near identity (as a trained HC is): +2 on the diagonal before the
        # row softmax, so Sinkhorn starts from a diagonally dominant, well-conditioned matrix
        comb = 2.0 * np.eye(hc) + rng.normal(0.0, 0.3, (hc, hc))
        return np.concatenate([pre_post, comb.reshape(-1)])
    if t.init == "router_bias":
        return rng.normal(0.0, 0.01, n)  # only re-ranks near-ties, as exp_probs_b does
    if t.init == "tid2eid":
        used, vocab = t.shape
        out = np.empty((vocab, used), dtype=np.int32)
        for lo in range(0, vocab, 16384):  # distinct experts per token, in chunks to bound memory
            hi = min(vocab, lo + 16384)
            keys = rng.random((hi - lo, cfg.n_expert), dtype=np.float32)
            out[lo:hi] = np.argsort(keys, axis=1)[:, :used]
        return out
    raise ValueError(f"{t.name}: unknown init {t.init!r}")
