"""One sequence on the engine (ds4kit._engine.Session), made by `Model.session`.

    from ds4kit.engine import Model
    model = Model.load("model.gguf", threads=None)      # None: every hardware thread
    s = model.session(max_ctx=4096)                     # fp8_kv / indexer_fp4 default to D's semantics
    last = s.prefill(prompt_ids, mode="exact")          # float32 [n_vocab]
    row = s.decode(token)                               # float32 [n_vocab]
    rows = s.verify([t0, t1, t2])                       # float32 [3, n_vocab], equal to decoding one by one

Errors come from the engine: ds4kit._engine.FormatError (bad file), ArgumentError (bad token,
context overflow), UnsupportedError.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ds4kit.engine.native import engine_module


def _token_list(tokens: Sequence[int] | np.ndarray) -> list[int]:
    return [int(t) for t in np.asarray(tokens).reshape(-1)]


class Snapshot:
    """A session's state at one position (a deep copy): restore it into a session of the same model
    and options any number of times, or save it to a file and load it in another process.

        snap = session.snapshot(); snap.save("turn1.ds4snap")
        snap = Snapshot.load("turn1.ds4snap", model); session.restore(snap)
    """

    def __init__(self, native: Any, model: Any, last_logits: np.ndarray | None = None):
        self._snap = native
        self._model = model
        # The logits of the last token it covers, when known: a restore can continue from them
        # without feeding that token again (a prefix cache hit on a whole prompt).
        self.last_logits = last_logits

    @property
    def pos(self) -> int:
        return self._snap.pos

    @property
    def bytes(self) -> int:
        return self._snap.bytes

    @property
    def tokens(self) -> list[int]:
        """The token ids the state covers (positions 0 .. pos-1)."""
        return list(self._snap.tokens)

    @property
    def options(self) -> dict[str, Any]:
        return {"max_ctx": self._snap.max_ctx, "fp8_kv": self._snap.fp8_kv, "indexer_fp4": self._snap.indexer_fp4}

    def save(self, path) -> Any:
        """Write it to `path` atomically (ds4kit.engine.snapshot_file); returns the path."""
        from ds4kit.engine.snapshot_file import write_snapshot

        return write_snapshot(path, self._snap, self._model, self.last_logits)

    @classmethod
    def load(cls, path, model: Any) -> "Snapshot":
        """A snapshot file of `model`; SnapshotFileError names what is wrong (another model or format
        version, a truncated or corrupt file)."""
        from ds4kit.engine.snapshot_file import read_snapshot

        f = read_snapshot(path, model)
        h = f["header"]
        o = h["options"]
        native = model._m.snapshot_from_image(int(o["max_ctx"]), bool(o["fp8_kv"]), bool(o["indexer_fp4"]),
                                              int(h["pos"]), int(h["hwm"]), [int(t) for t in f["tokens"]],
                                              f["arrays"])
        return cls(native, model, f["last_logits"])


class Session:
    """One sequence: raw KV ring, compressed rows, compressor/indexer state, position.

    Optional layer capture (`Model.session(..., capture_layers=[...], capture_at="output")`)
    records, per token, the mean of the 4 HC streams after (or before) chosen layers: a DSpark
    drafter's features."""

    def __init__(self, native: Any, model: Any = None):
        self._s = native
        self._model = model
        self._greedy_chain: int | None = None

    @property
    def pos(self) -> int:
        return self._s.pos

    @property
    def max_ctx(self) -> int:
        return self._s.max_ctx

    def decode(self, token: int) -> np.ndarray:
        return self._s.decode(int(token))

    def verify(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        return self._s.verify(_token_list(tokens))

    def decode_top(self, token: int, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """decode, but only the k best logits come back: (ids int32 [k], values float32 [k]),
        largest first, ties to the lower id; found on the backend (a GPU's logits stay there)."""
        return self._s.decode_top(int(token), int(k))

    def verify_top(self, tokens: Sequence[int] | np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """verify, with each row as decode_top: (ids [q, k], values [q, k])."""
        return self._s.verify_top(_token_list(tokens), int(k))

    @property
    def greedy_chain(self) -> int:
        """How many greedy steps `generate` runs per decode_greedy call (1 to 32; settable): by
        default 16 on a GPU, where each return to the host leaves the device waiting for the sync,
        Python and the next launch, and 1 on the CPU, where that wait is a tiny part of a step and
        tokens then stream one by one, or where the session captures layers (a chain captures none)."""
        if self._greedy_chain is not None:
            return self._greedy_chain
        kind = getattr(self._model, "backend_kind", "cpu") if self._model is not None else "cpu"
        return 16 if kind in ("cuda", "hip") and not self._s.capture_layers else 1

    @greedy_chain.setter
    def greedy_chain(self, n: int) -> None:
        reach = engine_module().MAX_REWIND
        if not 1 <= int(n) <= reach:
            raise ValueError(f"greedy_chain must be 1..{reach} (what rewind can take back), got {n}")
        self._greedy_chain = int(n)

    def decode_greedy(self, token: int, n: int) -> np.ndarray:
        """n greedy steps without the host between them: feeds `token`, then each step's argmax
        (decode_top's) to the next; returns the n argmaxes (int32 [n]). The session has then fed
        `token` and the first n - 1 of them, the last pending as after decode_top: stopping at
        id i, rewind(n - 1 - i). 1 <= n <= 32 (what rewind can take back)."""
        return self._s.decode_greedy(int(token), int(n))

    def prefill(self, tokens: Sequence[int] | np.ndarray, mode: str = "exact",
                should_stop: Callable[[], bool] | None = None) -> np.ndarray | None:
        """Feed the tokens; float32 [n_vocab] logits of the last one. `should_stop` is asked
        between blocks (Python's signal handlers run there too): once it is true the prefill
        stops, keeping the blocks fed so far, and returns None."""
        return self._s.prefill(_token_list(tokens), mode, should_stop)

    @property
    def fp8_kv(self) -> bool:
        """Whether stored KV rows take D's FP8-E4M3 round trip (False: llama.cpp's semantics)."""
        return self._s.fp8_kv

    @property
    def indexer_fp4(self) -> bool:
        """Whether indexer rows and queries take D's FP4 round trip (False: llama.cpp's semantics)."""
        return self._s.indexer_fp4

    @property
    def state_bytes(self) -> int:
        return self._s.state_bytes

    @property
    def tokens(self) -> list[int]:
        """The token ids fed so far (positions 0 .. pos-1)."""
        return list(self._s.tokens)

    def snapshot(self, last_logits: np.ndarray | None = None) -> Snapshot:
        """A deep copy of the state now (`.pos`, `.bytes`, `.tokens`, `.save(path)`); `restore` returns to
        it, any number of times. last_logits: the logits of the last token fed, kept with it."""
        return Snapshot(self._s.snapshot(), self._model, last_logits)

    def restore(self, snapshot: Snapshot) -> None:
        """Back to `snapshot` (taken from, or loaded for, a session of the same model and options)."""
        self._s.restore(snapshot._snap if isinstance(snapshot, Snapshot) else snapshot)

    def rewind(self, n: int) -> None:
        """Take back the last `n` positions (rejected draft tokens), at a cost independent of the
        context: what follows is bitwise what a session that never fed them computes.
        ArgumentError beyond `max_rewind`."""
        self._s.rewind(int(n))

    @property
    def max_rewind(self) -> int:
        """How many positions `rewind` can take back now (at most 32 from the highest position fed)."""
        return self._s.max_rewind

    @property
    def capture_layers(self) -> list[int]:
        return list(self._s.capture_layers)

    @property
    def capture_at(self) -> str:
        return self._s.capture_at

    def captured(self) -> np.ndarray:
        """float32 [tokens, len(capture_layers), n_embd]: the mean of the HC streams at the input or
        output (capture_at) of each capture layer, for every token of the last decode/verify/prefill."""
        return self._s.captured()
