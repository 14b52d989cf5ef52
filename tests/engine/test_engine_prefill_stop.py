"""A long prefill can be stopped between blocks: `should_stop` is asked after every block and
Python's signal handlers run there (so Ctrl-C does not wait for the whole prompt). What was fed
before the stop stays fed, exactly as if only those tokens had been prefilled."""
import signal

import numpy as np
import pytest

from engine_fixtures import synth_tiny_path, tokens

from ds4kit.engine import Model


@pytest.fixture(scope="module")
def model():
    return Model.load(synth_tiny_path(), threads=1)


# Batched prefill blocks are 256 tokens by default (Ds4Session::kPrefillBlock), each ending on a position
# that is a multiple of 4 (256 is one).
@pytest.mark.parametrize("mode, block", [("exact", 1), ("batched", 256)])
def test_should_stop_stops_between_blocks_and_keeps_what_was_fed(model, mode, block):
    V = model.hparams["n_vocab"]
    prompt, cont = tokens(800, V, 41), tokens(3, V, 42)
    asked = []

    def stop_on_third():
        asked.append(1)
        return len(asked) == 3

    s = model.session(900)
    assert s.prefill(prompt, mode, should_stop=stop_on_third) is None
    fed = s.pos
    assert len(asked) == 3 and fed == 3 * block
    ref = model.session(900)
    ref.prefill(prompt[:fed], mode)
    assert np.array_equal(np.stack([s.decode(t) for t in cont]), np.stack([ref.decode(t) for t in cont]))


def test_a_signal_handler_runs_during_a_long_prefill(model):
    V = model.hparams["n_vocab"]
    prompt = tokens(3000, V, 43)
    s = model.session(3100)

    class Alarm(Exception):
        pass

    def on_alarm(signum, frame):
        raise Alarm()

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(Alarm):
            s.prefill(prompt, "exact")  # 3000 one-token blocks: far longer than 50 ms
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert 0 < s.pos < len(prompt)  # raised between blocks, not after the whole prompt
