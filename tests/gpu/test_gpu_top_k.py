"""Backend::row_top_k on the GPU against the plain sort (tests/engine/test_engine_row_top_k.py's
cases: ties, NaN, -0/+0, infinities, rows of a real vocabulary's length), and the session's
decode_top / verify_top on the GPU against the top-k of its own logits, replayed steps included
(decode_top runs the top-k inside the recorded step), and decode_greedy's chains against decode_top.
SKIPS loudly without a GPU."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from test_gpu_seam import gpu  # noqa: F401  (a fixture)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from test_engine_row_top_k import (check_backend, greedy_chain_matches_decode_top,  # noqa: E402
                                   session_top_k_matches_logits)


@pytest.mark.parametrize("n", [1, 7, 300, 4099, 129280])
def test_gpu_row_top_k_matches_the_sort(gpu, n):
    check_backend(gpu, n, [1, 2, 5, 64], seed=n)


def test_gpu_session_decode_top_matches_its_logits(gpu, tiny_target):
    session_top_k_matches_logits(tiny_target, gpu, n_tokens=600)


def test_gpu_decode_greedy_matches_decode_top(gpu, tiny_target):
    """Greedy chains on the GPU (each step's argmax copied to the next step's input on the device,
    the recorded decode_top step replayed) against decode_top one token at a time."""
    greedy_chain_matches_decode_top(tiny_target, gpu)


def test_gpu_sessions_chain_greedy_steps_unless_they_capture(gpu, tiny_target):
    """generate's greedy loop chains 16 steps on a GPU session, none on one that captures layers
    (decode_greedy captures nothing), and the chained generation equals the one-by-one one."""
    from ds4kit.engine import Model
    from ds4kit.engine.generate import GenerationConfig, generate

    m = Model.load(tiny_target, backend=gpu)
    assert m.session(max_ctx=64).greedy_chain == 16
    assert m.session(max_ctx=64, capture_layers=[0]).greedy_chain == 1
    prompt = [5, 17, 99, 3]
    out = {}
    for chain in (1, 16):
        s = m.session(max_ctx=128)
        s.greedy_chain = chain
        res = generate(s, m.tokenizer, prompt, GenerationConfig(max_tokens=40, stop_token_ids=()))
        out[chain] = (res.tokens, s.pos, s.decode(3))
    assert out[16][0] == out[1][0] and out[16][1] == out[1][1]
    assert (out[16][2] == out[1][2]).all()
