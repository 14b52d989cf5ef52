"""The llama.cpp target (`--target llama.cpp`) on a tiny synthetic Q8_0 model.

Oracle: llama-cpp-python called directly through its high-level API (`Llama.eval` with
logits_all=True, a fresh `Llama` per check), which shares no code with the target's session
(batches, checkpoints and rewinds of its own). llama.cpp is deterministic on the CPU for the same
sequence of calls, so "within llama.cpp's own determinism" is bitwise here.

Fails (does not skip) when llama-cpp-python is missing, unless DS4KIT_ALLOW_MISSING_LLAMA=1.
"""
from __future__ import annotations


import numpy as np
import pytest

from ds4kit.errors import ConfigError
from ds4kit.synth import GROUPS, preset, write_target
from ds4kit.targets import Target, TargetOptions, build_target
from llama_required import llama_cpp_or_fail

pytestmark = pytest.mark.llama
PROMPT = "The quick brown fox jumps over the lazy dog, and then the dog chases the fox around the barn."




@pytest.fixture(scope="module")
def q8_model(tmp_path_factory):
    llama_cpp_or_fail()
    path = tmp_path_factory.mktemp("llama_target") / "tiny-q8.gguf"
    write_target(path, preset("tiny"), seed=0, types={g: "Q8_0" for g in GROUPS})
    return path


@pytest.fixture(scope="module")
def target(q8_model):
    t = build_target(TargetOptions(model=q8_model, threads=2, target="llama.cpp"))
    t.load(n_ctx=128)
    yield t
    t.close()


@pytest.fixture(scope="module")
def ids(target):
    return target.tokenize(PROMPT)


def direct_rows(path, calls: list[list[int]], n_ctx: int = 128) -> np.ndarray:
    """llama.cpp directly: a fresh Llama, one Llama.eval per call (a call of k tokens is one
    llama_decode when k <= n_batch), the logits of every row fed."""
    lc = llama_cpp_or_fail()
    llm = lc.Llama(model_path=str(path), n_ctx=n_ctx, n_batch=64, n_ubatch=64, n_threads=2, n_threads_batch=2,
                   logits_all=True, verbose=False)
    try:
        for call in calls:
            llm.eval(call)
        return np.array(llm.scores[:llm.n_tokens], dtype=np.float32)
    finally:
        llm.close()


def test_build_target_and_what_it_declares(q8_model, target):
    from ds4kit.targets.llama_cpp_target import LlamaCppTarget

    assert isinstance(target, LlamaCppTarget) and isinstance(target, Target)
    d = target.describe()
    assert d["kind"] == "llama.cpp" and d["threads"] == 2
    assert d["numerics"] == {"fp8_kv": False, "indexer_fp4": False}
    caps = target.capabilities
    assert (caps.logits, caps.verify, caps.rewind, caps.snapshot) == (True, False, True, False)
    assert d["capabilities"] == caps.as_dict()
    assert d["llama_cpp"]["version"] == "0.3.36"
    assert target.manifest_entry()["name"] == "ds4kit-synth-tiny"
    with pytest.raises(ConfigError) as e:
        build_target(TargetOptions(model=q8_model, target="vllm"))
    assert e.value.option == "--target"


def test_same_token_ids_as_the_embedded_target(q8_model, target, ids):
    embedded = build_target(TargetOptions(model=q8_model, threads=1))
    embedded.load()
    assert ids == embedded.tokenize(PROMPT) and len(ids) > 16
    chat = target.render_chat([{"role": "user", "content": "Hi"}])
    assert target.tokenize(chat) == embedded.tokenize(chat)


def test_session_rows_are_llama_cpps_own(q8_model, target, ids):
    s = target.session(max_ctx=64)
    last = s.prefill(ids[:10], mode="exact")
    decoded = [s.decode(t) for t in ids[10:12]]
    rows = s.verify(ids[12:16])
    assert last.shape == (target.llama.n_vocab(),) and last.dtype == np.float32
    assert rows.shape == (4, last.shape[0]) and s.pos == 16 and s.tokens == ids[:16]
    want = direct_rows(q8_model, [[t] for t in ids[:12]] + [ids[12:16]])
    assert np.array_equal(last, want[9]) and np.array_equal(np.stack(decoded), want[10:12])
    assert np.array_equal(rows, want[12:16])
    # A batched prefill is n_batch tokens per llama_decode: here one call.
    s = target.session(max_ctx=64)
    assert np.array_equal(s.prefill(ids[:10], mode="batched"), direct_rows(q8_model, [ids[:10]])[9])


def test_rewind_then_decode_equals_a_fresh_decode(q8_model, target, ids):
    fresh = direct_rows(q8_model, [[t] for t in ids[:16]])
    s = target.session(max_ctx=64)
    s.prefill(ids[:8], mode="exact")
    first = [s.decode(t) for t in ids[8:12]]
    s.rewind(4)
    assert s.pos == 8 and s.tokens == ids[:8]
    again = [s.decode(t) for t in ids[8:12]]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert np.array_equal(np.stack(again), fresh[8:12])
    # After a verify taken back whole, decoding is as if it never happened.
    s.verify(ids[12:16])
    s.rewind(4)
    assert np.array_equal(np.stack([s.decode(t) for t in ids[12:16]]), fresh[12:16])


def test_rewind_inside_a_verify_keeps_its_first_tokens(q8_model, target, ids):
    """verify 4, rewind 2: the 2 kept tokens are fed again as one batch (see the session notes),
    so what follows equals llama.cpp fed [prefix one by one, the 2 kept as a batch, then one]."""
    s = target.session(max_ctx=64)
    s.prefill(ids[:8], mode="exact")
    s.verify(ids[8:12])
    s.rewind(2)
    assert s.pos == 10 and s.tokens == ids[:10]
    got = s.decode(ids[10])
    want = direct_rows(q8_model, [[t] for t in ids[:8]] + [ids[8:10], [ids[10]]])
    assert np.array_equal(got, want[10])


def test_rewind_limits_and_bad_calls(target, ids):
    s = target.session(max_ctx=48)
    assert s.max_ctx == 48 and s.max_rewind == 0
    s.prefill((ids * 3)[:40], mode="batched")     # one call: the only state to go back to is position 0
    assert s.max_rewind == 32                     # ... but never further back than 32, as the engine
    with pytest.raises(ValueError, match="rewind"):
        s.rewind(33)
    with pytest.raises(ValueError, match="max_ctx"):
        s.verify(ids[:9])
    with pytest.raises(ValueError, match="verify takes"):
        s.verify([])
    # A newer session takes the context over; the old one refuses instead of computing on its state.
    newer = target.session(max_ctx=48)
    with pytest.raises(RuntimeError, match="replaced"):
        s.decode(ids[0])
    assert newer.decode(ids[0]).shape == (target.llama.n_vocab(),)
    with pytest.raises(ValueError, match="exceeds the llama.cpp context"):
        from ds4kit.targets.llama_cpp_session import LlamaCppSession
        LlamaCppSession(target.llama, target._lc, 10 ** 6)


def test_generate_greedy_follows_llama_cpps_argmax(q8_model, target):
    """ds4kit's generation loop over llama.cpp's logits: greedy is llama.cpp's own argmax chain."""
    from ds4kit.engine.generate import GenerationConfig

    ids = target.tokenize(target.render_chat([{"role": "user", "content": "Hi"}]))
    res = target.generate(ids, GenerationConfig(max_tokens=4, temperature=0.0), max_ctx=64)
    lc = llama_cpp_or_fail()
    llm = lc.Llama(model_path=str(q8_model), n_ctx=64, n_batch=64, n_ubatch=64, n_threads=2, n_threads_batch=2,
                   logits_all=True, verbose=False)
    try:
        for t in ids:           # prefill_mode "exact": one token per llama_decode
            llm.eval([t])
        want = []
        for _ in range(4):
            want.append(int(np.argmax(llm.scores[llm.n_tokens - 1])))
            llm.eval([want[-1]])
    finally:
        llm.close()
    assert res.tokens == want and res.stop_reason == "max_tokens"


def test_a_larger_session_reopens_the_context(q8_model, ids):
    t = build_target(TargetOptions(model=q8_model, threads=1, target="llama.cpp"))
    t.load(n_ctx=32)
    small = t.session(max_ctx=32)
    small.prefill(ids[:4], mode="batched")
    big = t.session(max_ctx=200)
    assert t.n_ctx == 200 and t.llama.n_ctx() >= 200
    with pytest.raises(RuntimeError, match="replaced"):
        small.decode(ids[4])
    assert np.array_equal(big.prefill(ids[:4], mode="batched"), direct_rows(q8_model, [ids[:4]])[3])
    t.close()


def test_flash_attention_is_llamas_default_with_gpu_layers(q8_model):
    """llama-cpp-python's Llama() asks for flash attention disabled unless told; with layers on a
    GPU `open_llama` asks for llama.cpp's own default (auto, as llama-bench runs it), and only for
    that constructor: the module's constant is back afterwards and a CPU-only open is unchanged."""
    import llama_cpp

    from ds4kit.targets.llama_cpp_loader import flash_attention_type, open_llama

    disabled = llama_cpp.llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    cpu = open_llama(q8_model, threads=2, n_ctx=64, n_batch=32)
    assert flash_attention_type(cpu) == "disabled"
    gpu = open_llama(q8_model, threads=2, n_ctx=64, n_batch=32, n_gpu_layers=999)  # a CPU build ignores the layers
    assert flash_attention_type(gpu) == "auto"
    assert llama_cpp.llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED == disabled == 0
    for llm in (cpu, gpu):  # the context built with auto runs, and computes what disabled does
        llm.eval([1, 2, 3])
    last = [np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(cpu.n_vocab(),)).copy()
            for llm in (cpu, gpu)]
    assert np.all(np.isfinite(last[1]))
    # Flash attention rounds through F16 in llama.cpp: close, not equal (a wrong context is far).
    nerr = float(np.linalg.norm(last[1] - last[0]) / np.linalg.norm(last[0]))
    assert nerr < 0.05, nerr
    assert flash_attention_type(open_llama(q8_model, threads=2, n_ctx=64, n_batch=32)) == "disabled"
