"""The synthetic targets load and run in llama.cpp (llama-cpp-python 0.3.36), the independent oracle.

If llama_cpp cannot be imported these tests FAIL, unless DS4KIT_ALLOW_MISSING_LLAMA=1 (then they skip)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from tokenizers import Tokenizer

from ds4kit.synth import SynthConfig, write_target
from ds4kit.synth.tokenizer_meta import tokenizer_json_path

pytestmark = pytest.mark.llama

VOCAB = 129280


def _llama_cpp():
    try:
        import llama_cpp
    except ImportError as exc:
        if os.environ.get("DS4KIT_ALLOW_MISSING_LLAMA") == "1":
            pytest.skip(f"llama_cpp not importable ({exc}); allowed by DS4KIT_ALLOW_MISSING_LLAMA=1")
        pytest.fail(f"llama_cpp (llama-cpp-python==0.3.36) is not importable: {exc}. Install it as "
                    "architecture.md says, or set DS4KIT_ALLOW_MISSING_LLAMA=1 to skip these tests.")
    return llama_cpp


def _load(path):
    return _llama_cpp().Llama(model_path=str(path), n_ctx=64, logits_all=True, n_threads=2, verbose=False)


@pytest.fixture(scope="module")
def tiny_llm(synth_tiny_files):
    llm = _load(synth_tiny_files.target.path)
    yield llm
    llm.close()


def _prompt(llm, text: bytes) -> list[int]:
    # BOS written explicitly, as the chat template does (the vocabulary's add_bos_token is false)
    return [0] + llm.tokenize(text, add_bos=False)


def _eval_rows(llm, tokens):
    llm.reset()
    llm.eval(tokens)
    return np.array(llm.scores[: len(tokens)], dtype=np.float64)


def test_tiny_target_evaluates_with_finite_logits(tiny_llm):
    tokens = _prompt(tiny_llm, b"Hello world, this is a test")
    assert len(tokens) > 4
    rows = _eval_rows(tiny_llm, tokens)
    assert rows.shape == (len(tokens), VOCAB)
    assert np.isfinite(rows).all()
    assert (rows.std(axis=1) > 0.1).all()  # not a constant output
    assert not np.allclose(rows[-1], rows[-2])  # positions see different inputs
    np.testing.assert_allclose(_eval_rows(tiny_llm, tokens), rows, rtol=0, atol=1e-4)  # re-evaluation agrees


def test_tiny_target_generates_greedy_tokens(tiny_llm):
    prompt = _prompt(tiny_llm, b"The capital of France is")
    first_expected = int(np.argmax(_eval_rows(tiny_llm, prompt)[-1]))
    tiny_llm.reset()
    out = []
    for tok in tiny_llm.generate(prompt, temp=0.0, top_k=1, reset=True):
        out.append(tok)
        if len(out) == 4:
            break
    assert len(out) == 4 and all(0 <= t < VOCAB for t in out)
    assert out[0] == first_expected  # greedy = argmax of the last prompt row


@pytest.mark.parametrize("text", ["Hello world, this is a test", "数字 12345 和中文，ひらがな",
                                  "def f(x):\n    return x**2  # square\n", "<｜User｜>hi<｜Assistant｜></think>"])
def test_llama_tokenizer_matches_hf_tokenizers(tiny_llm, text):
    # llama.cpp tokenises with our metadata (tokens, merges, types, pre = joyai-llm); HF uses tokenizer.json
    hf = Tokenizer.from_file(str(tokenizer_json_path()))
    assert tiny_llm.tokenize(text.encode(), add_bos=False, special=True) == hf.encode(text, add_special_tokens=False).ids


def test_k_iq_mxfp4_bf16_types_load_and_run(tmp_path):
    # row lengths of 256 so K and IQ blocks fit; embed/output kept small-ish
    cfg = SynthConfig(name="kquant", n_layer=4, compress_ratios=(0, 0, 4, 128), hash_layers=2, n_embd=256, n_head=2,
                      head_dim=256, n_rot=64, q_lora_rank=256, o_lora_rank=128, o_groups=2, n_expert=4,
                      n_expert_used=2, expert_ff=256, indexer_heads=2, indexer_top_k=4, swa_window=16)
    types = {"embed": "Q4_0", "output": "Q8_0", "attn": "Q4_K", "attn_out": "Q2_K", "experts": "IQ2_XXS",
             "shared": "MXFP4", "hc": "BF16", "router": "BF16", "compressor": "Q4_K", "indexer": "F32"}
    w = write_target(tmp_path / "kquant.gguf", cfg, seed=2, types=types)
    assert w.warnings == []
    llm = _load(w.path)
    try:
        rows = _eval_rows(llm, _prompt(llm, b"Quantised weights, one more check."))
    finally:
        llm.close()
    assert rows.shape[1] == VOCAB and np.isfinite(rows).all() and (rows.std(axis=1) > 0.1).all()
