"""Position-by-position comparison of the numpy reference with llama.cpp (the 'G' of
ds4-model.md) on one GGUF, with margin-aware exemptions for discrete near-ties."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ds4_numpy_reference import ReferenceSession
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


def _near_ties(s: ReferenceSession, p: int, tie_margin: float) -> list[tuple[int, str]]:
    out = []
    for il in range(s.hp.n_layer):
        rec = s.trace[il][p]
        for kind in ("moe", "idx"):
            if rec.get(kind + "_margin", np.inf) < tie_margin:
                out.append((il, kind))
    return out


def reference_logits_following(weights: Weights, tokens: list[int], G: np.ndarray, tie_margin: float,
                               **switches):
    """Reference logits, resolving near-ties the way the other implementation did.

    A top-k boundary (routed experts or indexer rows) whose margin is below tie_margin
    can legitimately flip under float32 noise, and a flip changes that token's later-layer
    KV, which later positions attend to; comparing past it measures the flip, not the
    arithmetic. So at a position with near-ties the step is rerun with every combination
    of those boundaries flipped, and the variant whose logits are closest to G[p] is kept.
    Only boundaries with margin < tie_margin may be flipped.
    Returns (logits [n, vocab], session, [(position, flipped boundaries), ...])."""
    from itertools import combinations

    s = ReferenceSession(weights, max_ctx=len(tokens), trace=True, **switches)
    out, flips = [], []
    for p, t in enumerate(tokens):
        snap = s.snapshot()
        logits = s.step(t)
        ties = _near_ties(s, p, tie_margin)
        if ties:
            variants = [c for r in range(1, min(len(ties), 3) + 1) for c in combinations(ties, r)]
            best, best_err = (), float(np.max(np.abs(logits - G[p])))
            for v in variants:
                s.restore(snap)
                err = float(np.max(np.abs(s.step(t, swaps=v) - G[p])))
                if err < best_err:
                    best, best_err = v, err
            s.restore(snap)
            logits = s.step(t, swaps=best)
            if best:
                flips.append((p, best))
        out.append(logits)
    return np.array(out), s, flips


def decision_margins(weights: Weights, s: ReferenceSession) -> np.ndarray:
    """Smallest margin, over layers, of the discrete choices the reference made at each
    position: routed top-k and indexer top-k (k-th minus (k+1)-th score)."""
    n = s.pos
    out = np.full(n, np.inf)
    for il in range(weights.hp.n_layer):
        for p in range(n):
            rec = s.trace[il][p]
            out[p] = min(out[p], rec.get("moe_margin", np.inf), rec.get("idx_margin", np.inf))
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
