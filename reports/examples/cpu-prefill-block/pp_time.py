# One process: load MODEL on the CPU backend (2 threads), prefill 64 tokens to warm up, then
# time REPS batched prefills of 512 tokens, each from an empty session.
#   PYTHONPATH=<tree> python pp_time.py MODEL LABEL [REPS]
import sys, time, numpy as np
from ds4kit import _engine
m = _engine.Model(sys.argv[1], threads=2)
V = m.hparams["n_vocab"]
toks = [int(t) for t in np.random.default_rng(3).integers(0, V, 512)]
s = m.session(600); s.prefill(toks[:64], "batched")
ts = []
for _ in range(int(sys.argv[3]) if len(sys.argv) > 3 else 3):
    s = m.session(600)
    t0 = time.perf_counter(); s.prefill(toks, "batched"); ts.append(time.perf_counter() - t0)
print(sys.argv[2], "prefill 512:", ["%.0f" % (512 / t) for t in ts], "tok/s")
