"""The C++ engine against llama.cpp 0.3.36 (spec 'G', an independent implementation of
deepseek4) with G's semantics (fp8_kv=False, indexer_fp4=False), position by position.

Same model shape as the reference's llama test (4 layers: ratios 0 with hash routing, 4,
128, 4; window 128; indexer top_k 8 of 8 heads; F32 weights). 200 tokens: the ring wraps,
the ratio-128 boundary at 127 is crossed, the indexer drops rows from position 35 on.
Tolerance and near-tie exemptions are the reference test's (tests/reference/
test_ds4_ref_vs_llama.py): |G - engine| <= 1e-2 per logit (G rounds its KV cache, query and
softmax weights to F16), except at positions where the float64 reference's routed-expert or
indexer top-k boundary has a margin below 2e-3."""
import numpy as np
import pytest

from engine_fixtures import ref_tiny_weights, tmp_dir, write_ref_gguf  # sets sys.path first
from ds4_ref_llama_compare import compare, decision_margins, import_llama_cpp, llama_logits, reference_logits  # noqa: E402
from ds4_ref_weights import load_weights  # noqa: E402

from ds4kit import _engine

N_TOKENS = 200
TOL = 1e-2
TIE_MARGIN = 2e-3

pytestmark = pytest.mark.llama


def test_engine_matches_llama_cpp_position_by_position():
    llama_cpp = import_llama_cpp()
    if llama_cpp is None:
        pytest.skip("llama_cpp missing and DS4KIT_ALLOW_MISSING_LLAMA=1")
    w = ref_tiny_weights(n_layer=4, compress_ratios=[0, 4, 128, 4], n_swa=128, idx_n_head=8, idx_top_k=8)
    path = write_ref_gguf(w, tmp_dir() / "llama-f32.gguf", f16=False)
    w = load_weights(path)
    tokens = [int(t) for t in np.random.default_rng(31).integers(0, w.hp.n_vocab, N_TOKENS)]
    G = llama_logits(llama_cpp, path, tokens)
    s = _engine.Model(str(path), threads=2).session(N_TOKENS, fp8_kv=False, indexer_fp4=False)
    got = s.verify(tokens[:8]).astype(np.float64)
    got = np.concatenate([got] + [s.decode(t)[None].astype(np.float64) for t in tokens[8:]])
    _, ref_session = reference_logits(w, tokens, fp8_kv=False, indexer_fp4=False)
    c = compare(G, got, decision_margins(w, ref_session), TIE_MARGIN)
    print(c.summary())
    assert c.exempt.mean() < 0.20, c.summary()
    bad = np.where(~c.exempt & (c.max_abs > TOL))[0]
    assert len(bad) == 0, f"positions beyond {TOL}: {bad[:20]} (|G-E| {c.max_abs[bad][:5]}); {c.summary()}"
    clear = ~c.exempt & (c.top2 > 2 * TOL)
    assert np.all(c.argmax_agree[clear]), np.where(clear & ~c.argmax_agree)[0]
