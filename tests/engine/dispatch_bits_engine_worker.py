"""Runs in a subprocess (the dispatch level is fixed per process): feeds a seeded token
stream through batched and exact prefill, verify and decode and writes every logit row to
an .npz file. Usage: dispatch_bits_engine_worker.py MODEL OUT.npz THREADS N_TOKENS"""
import sys

import numpy as np

from ds4kit import _engine


def main() -> None:
    path, out, threads, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    model = _engine.Model(path, threads)
    toks = [int(t) for t in np.random.default_rng(7).integers(3, model.hparams["n_vocab"], n)]
    s = model.session(max_ctx=n + 8)
    res = {"prefill_batched": s.prefill(toks[: n // 2], "batched"), "verify": s.verify(toks[n // 2: n // 2 + 7])}
    res["decode"] = np.stack([s.decode(t) for t in toks[n // 2 + 7:]])
    res["prefill_exact"] = model.session(max_ctx=n + 8).prefill(toks[: n // 3], "exact")
    np.savez(out, backend=np.array(model.backend), **res)


if __name__ == "__main__":
    main()
