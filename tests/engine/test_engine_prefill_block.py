"""DS4KIT_PREFILL_BLOCK sets the tokens a batched prefill carries a block (Ds4Session::
prefill_block; 256 by default): no bit may depend on it (batch invariance), so prefills of the
same prompt with blocks of 4, 64, 256 and 512 tokens give the same logits, and the sessions decode
on alike. That each setting is taken is seen from the blocks' count (`should_stop` is asked after
every block). A bad value is an error naming the variable."""
import math

import numpy as np
import pytest

from engine_fixtures import synth_tiny_path, tokens

from ds4kit.engine import Model


@pytest.fixture(scope="module")
def model():
    return Model.load(synth_tiny_path(), threads=1)


def _run(model, prompt, cont):
    blocks = []
    s = model.session(len(prompt) + 8)
    last = s.prefill(prompt, "batched", should_stop=lambda: blocks.append(1) and False)
    return last, np.stack([s.decode(t) for t in cont]), len(blocks) + 1


def test_the_prefill_block_changes_no_bit(model, monkeypatch):
    V = model.hparams["n_vocab"]
    prompt, cont = tokens(530, V, 51), tokens(3, V, 52)
    out = {}
    for block in (None, "4", "64", "512"):
        if block is None:
            monkeypatch.delenv("DS4KIT_PREFILL_BLOCK", raising=False)
        else:
            monkeypatch.setenv("DS4KIT_PREFILL_BLOCK", block)
        out[block] = _run(model, prompt, cont)
    for block, size in ((None, 256), ("4", 4), ("64", 64), ("512", 512)):
        assert out[block][2] == math.ceil(len(prompt) / size), f"DS4KIT_PREFILL_BLOCK={block}: blocks of another size"
        assert np.array_equal(out[block][0], out[None][0]), f"DS4KIT_PREFILL_BLOCK={block}: the prefill's logits differ"
        assert np.array_equal(out[block][1], out[None][1]), f"DS4KIT_PREFILL_BLOCK={block}: decode after it differs"


@pytest.mark.parametrize("bad", ["0", "6", "8192", "lots"])
def test_a_bad_prefill_block_names_the_variable(model, monkeypatch, bad):
    monkeypatch.setenv("DS4KIT_PREFILL_BLOCK", bad)
    with pytest.raises(Exception, match=f"DS4KIT_PREFILL_BLOCK is '{bad}'"):
        model.session(64)
