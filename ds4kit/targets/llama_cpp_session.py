"""One sequence on llama.cpp (llama-cpp-python, in process) with the method names and shapes of
ds4kit.engine.Session, so a probe drives either the same way:

    s = target.session(max_ctx=512)            # LlamaCppTarget.session
    last = s.prefill(prompt_ids)               # float32 [n_vocab], logits of the last token
    row = s.decode(token)                      # float32 [n_vocab]
    ids, vals = s.decode_top(token, k=2)       # its 2 best (ties: lower id), from the row here
    rows = s.verify([t0, t1, t2])              # float32 [3, n_vocab]: ONE llama_decode, every row
    s.rewind(3)                                # back to where verify started
    s.pos, s.max_ctx, s.tokens, s.max_rewind

What differs from our engine, and why:
- `verify` rows are llama.cpp's batched rows; they are not guaranteed bitwise equal to one-token
  `decode` (that is what `ds4kit probe margins` measures), so the target declares verify=False.
- `rewind`: llama.cpp's `llama_memory_seq_rm` refuses to drop the tail of a deepseek4 sequence
  (it returns false: the compressor state is not positional), so every forward call first saves
  the sequence state (`llama_state_seq_get_data`), and `rewind(n)` restores the newest saved state
  at or before `pos - n` (`llama_state_seq_set_data`). Where `pos - n` falls inside a call (a
  verify of 4 of which 2 are kept), the kept tokens are fed again by the same kind of call
  (a verify of 2): their KV rows are then those of the narrower batch. Rewinding to a call
  boundary is exact. At most MAX_REWIND positions back from the highest position fed, as ours.
  Cost: one copy of the sequence state per forward call.
- `prefill(mode="exact")` feeds the tokens one by one, as decoding does; mode="batched" feeds
  n_batch tokens per llama_decode.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ds4kit.engine.native import engine_module

MAX_REWIND = engine_module().MAX_REWIND   # ours (Ds4Session::kMaxRewind), so both sessions rewind alike
_SEQ = 0          # the one sequence id a session uses


@dataclass
class _Checkpoint:
    pos: int          # the state holds positions 0 .. pos-1
    state: Any        # ctypes byte array from llama_state_seq_get_data
    call: str         # the call that followed it: "prefill", "decode" or "verify"


class LlamaCppSession:
    """A sequence on a `llama_cpp.Llama` owned by its target. One session at a time: a new one
    clears the context's memory, and the one it replaced refuses further calls."""

    def __init__(self, llm: Any, lc: Any, max_ctx: int):
        if max_ctx > llm.n_ctx():
            raise ValueError(f"max_ctx {max_ctx} exceeds the llama.cpp context of {llm.n_ctx()} tokens")
        self._llm, self._lc, self._ctx = llm, lc, llm._ctx
        self._n_vocab = int(llm.n_vocab())
        self._n_batch = int(llm.n_batch)
        self._max_ctx = int(max_ctx)
        self._tokens: list[int] = []
        self._checkpoints: list[_Checkpoint] = []
        self._high = 0  # highest position fed, for max_rewind
        llm.ds4kit_session = self             # the context's current owner (see _check_owner)
        self._ctx.kv_cache_seq_rm(-1, 0, -1)  # a fresh, empty sequence (whole-sequence removal always works)

    # -- where it is ----------------------------------------------------------
    @property
    def pos(self) -> int:
        return len(self._tokens)

    @property
    def max_ctx(self) -> int:
        return self._max_ctx

    @property
    def tokens(self) -> list[int]:
        """The token ids fed so far (positions 0 .. pos-1)."""
        return list(self._tokens)

    @property
    def max_rewind(self) -> int:
        """How many positions `rewind` can take back now."""
        oldest = self._checkpoints[0].pos if self._checkpoints else self.pos
        return min(self.pos - oldest, MAX_REWIND - (self._high - self.pos))

    # -- forward calls ----------------------------------------------------------
    def decode(self, token: int) -> np.ndarray:
        """Feed one token; its logits, float32 [n_vocab]."""
        return self._forward([int(token)], "decode", all_rows=False)[0]

    def verify(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        """Feed the tokens in ONE llama_decode with every row marked for output; float32
        [len(tokens), n_vocab]. At most n_batch tokens."""
        ids = _token_list(tokens)
        if not 1 <= len(ids) <= self._n_batch:
            raise ValueError(f"verify takes 1..{self._n_batch} tokens (n_batch) in one forward, got {len(ids)}")
        return self._forward(ids, "verify", all_rows=True)

    def decode_top(self, token: int, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """decode's k best logits as ds4kit.engine.Session.decode_top gives them (largest first,
        ties to the lower id, NaN last); llama.cpp hands the row over, so they are picked here."""
        ids, vals = top_k_rows(self.decode(token)[None, :], k)
        return ids[0], vals[0]

    def verify_top(self, tokens: Sequence[int] | np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """verify, each row as decode_top."""
        return top_k_rows(self.verify(tokens), k)

    def prefill(self, tokens: Sequence[int] | np.ndarray, mode: str = "exact",
                should_stop: Callable[[], bool] | None = None) -> np.ndarray | None:
        """Feed the tokens; float32 [n_vocab] logits of the last one. mode "exact": one token per
        llama_decode, as decoding; "batched": n_batch per llama_decode. `should_stop` is asked
        between forwards; once true the prefill stops, keeping what was fed, and returns None."""
        ids = _token_list(tokens)
        if mode not in ("exact", "batched"):
            raise ValueError(f"prefill mode must be exact or batched, got {mode!r}")
        if not ids:
            raise ValueError("prefill needs at least one token")
        step = 1 if mode == "exact" else self._n_batch
        last = None
        for i in range(0, len(ids), step):
            if should_stop is not None and should_stop():
                return None
            last = self._forward(ids[i:i + step], "prefill" if step > 1 else "decode", all_rows=False)[0]
        return last

    def rewind(self, n: int) -> None:
        """Take back the last `n` positions (see the module notes for how, and what it costs)."""
        n = int(n)
        if n < 0 or n > self.max_rewind:
            raise ValueError(f"rewind({n}): can take back 0..{self.max_rewind} positions now")
        if n == 0:
            return
        self._check_owner()
        want = self.pos - n
        i = max(k for k, c in enumerate(self._checkpoints) if c.pos <= want)
        cp = self._checkpoints[i]
        self._restore(cp)
        kept = self._tokens[cp.pos:want]
        del self._tokens[cp.pos:]
        del self._checkpoints[i:]   # the state after each of them is gone
        if kept:
            self._forward(kept, cp.call, all_rows=cp.call == "verify")

    # -- llama.cpp ---------------------------------------------------------------
    def _check_owner(self) -> None:
        if getattr(self._llm, "ds4kit_session", None) is not self:
            raise RuntimeError("this llama.cpp session was replaced by a newer one on the same context "
                               "(one session per target at a time)")

    def _forward(self, ids: list[int], call: str, all_rows: bool) -> np.ndarray:
        self._check_owner()
        if self.pos + len(ids) > self._max_ctx:
            raise ValueError(f"context full: {self.pos} + {len(ids)} tokens exceed max_ctx {self._max_ctx}")
        self._checkpoint(call)
        batch = self._llm._batch
        batch.set_batch(ids, self.pos, logits_all=all_rows)   # the last row is always marked
        self._ctx.decode(batch)                               # RuntimeError on a nonzero return
        rows = len(ids) if all_rows else 1
        out = np.ctypeslib.as_array(self._ctx.get_logits(), shape=(rows * self._n_vocab,))
        self._tokens.extend(ids)
        self._high = max(self._high, self.pos)
        return out.reshape(rows, self._n_vocab).astype(np.float32, copy=True)

    def _checkpoint(self, call: str) -> None:
        lc, ctx = self._lc, self._ctx.ctx
        size = lc.llama_state_seq_get_size(ctx, _SEQ)
        buf = (ctypes.c_uint8 * size)()
        written = lc.llama_state_seq_get_data(ctx, buf, size, _SEQ)
        if written != size:
            raise RuntimeError(f"llama_state_seq_get_data wrote {written} of {size} bytes")
        self._checkpoints.append(_Checkpoint(self.pos, buf, call))
        # Only states a rewind can still reach are kept.
        floor = self._high - MAX_REWIND
        while len(self._checkpoints) > 1 and self._checkpoints[1].pos <= floor:
            self._checkpoints.pop(0)

    def _restore(self, cp: _Checkpoint) -> None:
        self._ctx.kv_cache_seq_rm(-1, 0, -1)
        read = self._lc.llama_state_seq_set_data(self._ctx.ctx, cp.state, len(cp.state), _SEQ)
        if read != len(cp.state):
            raise RuntimeError(f"llama_state_seq_set_data read {read} of {len(cp.state)} bytes")


def _token_list(tokens: Sequence[int] | np.ndarray) -> list[int]:
    return [int(t) for t in np.asarray(tokens).reshape(-1)]


def top_k_rows(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids int32 [n, k], values float32 [n, k]): each row's k largest, larger first, an equal
    value at the lower index first, NaN last (the engine's Backend::row_top_k order)."""
    rows = np.asarray(rows, dtype=np.float32)
    if not 1 <= k <= min(rows.shape[1], 64):
        raise ValueError(f"top-k: k {k} of rows of {rows.shape[1]} (1 <= k <= min(n, 64))")
    nan = np.isnan(rows)
    key = np.where(nan, 0.0, -rows.astype(np.float64))  # lexsort: NaN flag, then -value, then index
    idx = np.broadcast_to(np.arange(rows.shape[1]), rows.shape)
    ids = np.lexsort((idx, key, nan), axis=-1)[:, :k].astype(np.int32)
    return ids, np.take_along_axis(rows, ids.astype(np.int64), axis=1)
