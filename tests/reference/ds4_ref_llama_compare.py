"""Position-by-position comparison of the numpy reference with llama.cpp (the 'G' of
ds4-model.md) on one GGUF, with margin-aware exemptions for discrete near-ties."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ds4_numpy_reference import ReferenceSession
from ds4_ref_numerics import softplus
from ds4_ref_weights import Weights


def import_llama_cpp():
    """llama_cpp, or None when it is missing and DS4KIT_ALLOW_MISSING_LLAMA=1; otherwise a
    missing llama_cpp is an error (the oracle must not silently disappear)."""
    try:
        import llama_cpp
        return llama_cpp
    except ImportError as exc:
        if os.environ.get("DS4KIT_ALLOW_MISSING_LLAMA") == "1":
            return None
        raise AssertionError("llama_cpp is not importable (pip install llama-cpp-python==0.3.36, "
                             "or set DS4KIT_ALLOW_MISSING_LLAMA=1 to skip)") from exc


def llama_logits(llama_cpp, path, tokens: list[int], n_threads: int = 2) -> np.ndarray:
    """Logits of every prompt position from llama.cpp (one eval over the whole prompt)."""
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=max(512, len(tokens) + 16), n_batch=512,
                          logits_all=True, n_threads=n_threads, verbose=False)
    try:
        llm.eval(tokens)
        return np.array(llm.scores[:len(tokens)], dtype=np.float64)
    finally:
        llm.close()


def reference_logits(weights: Weights, tokens: list[int], **switches):
    s = ReferenceSession(weights, max_ctx=len(tokens), trace=True, **switches)
    return np.array([s.step(t) for t in tokens]), s


def decision_margins(weights: Weights, s: ReferenceSession) -> np.ndarray:
    """Smallest margin, over layers, of the discrete choices the reference made at each
    position: routed top-k (k-th minus (k+1)-th biased score) and indexer top-k
    (k-th minus (k+1)-th indexer score). A small margin means a tiny numeric
    difference may legitimately flip the choice."""
    hp = weights.hp
    n = s.pos
    out = np.full(n, np.inf)
    for il in range(hp.n_layer):
        b = f"blk.{il}."
        for p in range(n):
            rec = s.trace[il][p]
            if il >= hp.n_hash_layers:
                sel = np.sqrt(softplus(weights[b + "ffn_gate_inp.weight"] @ rec["h2"])) + weights[b + "exp_probs_b.bias"]
                x = np.sort(sel)[::-1]
                out[p] = min(out[p], x[hp.n_expert_used - 1] - x[hp.n_expert_used])
            if "indexer_scores" in rec:
                x = np.sort(rec["indexer_scores"])[::-1]
                out[p] = min(out[p], x[hp.idx_top_k - 1] - x[hp.idx_top_k])
    return out


@dataclass
class Comparison:
    max_abs: np.ndarray        # per position, max |G - R| over the vocab
    margin: np.ndarray         # per position, reference decision margin
    exempt: np.ndarray         # positions with a near-tie decision (bool)
    top2: np.ndarray           # per position, reference top-1 minus top-2 logit
    argmax_agree: np.ndarray   # per position

    def summary(self) -> str:
        ok = ~self.exempt
        return (f"{len(self.max_abs)} positions, {int(self.exempt.sum())} exempt near-ties; "
                f"max|G-R| median {np.median(self.max_abs[ok]):.2e}, worst {np.max(self.max_abs[ok]):.2e}; "
                f"argmax agreement {self.argmax_agree.mean():.4f}")


def compare(G: np.ndarray, R: np.ndarray, margins: np.ndarray, tie_margin: float) -> Comparison:
    srt = np.sort(R, axis=1)
    return Comparison(
        max_abs=np.max(np.abs(G - R), axis=1),
        margin=margins,
        exempt=margins < tie_margin,
        top2=srt[:, -1] - srt[:, -2],
        argmax_agree=np.argmax(G, axis=1) == np.argmax(R, axis=1),
    )
