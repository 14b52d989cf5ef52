"""Generation loop over an engine session: prefill, then sample/decode until a stop.

    result = generate(session, tokenizer, prompt_ids, GenerationConfig(max_tokens=64),
                      on_token=lambda ev: print(ev.text, end=""), should_stop=lambda: False)

`should_stop` is polled before each token; once it is true the loop returns what it has
(stop_reason "interrupted"), so a Ctrl-C loses nothing that was already generated.

Everything that decides a token lives in the C++ sampler (seeded, deterministic);
this module only sequences calls, detects stops, streams text and takes timings.
"""
from __future__ import annotations

import codecs
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# The valid range of each sampling value (the model-card schema states the same ranges).
SAMPLING_RULES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "temperature": ("a number >= 0 (0 is greedy)", lambda v: _finite(v) and v >= 0),
    "top_k": ("an integer >= 0 (0 keeps every token)", lambda v: _int(v) and v >= 0),
    "top_p": ("a number in (0, 1] (1 keeps every token)", lambda v: _finite(v) and 0 < v <= 1),
    "min_p": ("a number in [0, 1] (0 keeps every token)", lambda v: _finite(v) and 0 <= v <= 1),
    "repetition_penalty": ("a number > 0 (1 is none)", lambda v: _finite(v) and v > 0),
    "presence_penalty": ("a finite number (0 is none)", _finite),
    "frequency_penalty": ("a finite number (0 is none)", _finite),
    "penalty_last_n": ("an integer >= -1 (-1: the whole history)", lambda v: _int(v) and v >= -1),
    "seed": ("an integer in [0, 2**64)", lambda v: _int(v) and 0 <= v < 2**64),
}


def sampling_problem(name: str, value: Any) -> str | None:
    """Why `value` is not a valid sampling `name`, or None when it is."""
    want, ok = SAMPLING_RULES[name]
    return None if ok(value) else f"must be {want}, got {value!r}"


@dataclass
class GenerationConfig:
    max_tokens: int = 128
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    penalty_last_n: int = -1
    seed: int = 0
    stop_token_ids: tuple[int, ...] = ()
    stop_strings: tuple[str, ...] = ()
    logprobs: int = 0                  # top-K log-probabilities recorded per generated position
    prefill_mode: str = "exact"
    # Thinking budget: once this many tokens follow the prompt without `think_end_id`,
    # `think_end_id` is forced as the next token (None: no budget).
    thinking_budget: int | None = None
    think_end_id: int | None = None

    def validate(self) -> None:
        for name in SAMPLING_RULES:
            problem = sampling_problem(name, getattr(self, name))
            if problem:
                raise ValueError(f"{name} {problem}")
        if self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0 (got {self.max_tokens})")
        if self.logprobs < 0:
            raise ValueError(f"logprobs must be >= 0 (got {self.logprobs})")
        if self.thinking_budget is not None and self.think_end_id is None:
            raise ValueError("thinking_budget needs think_end_id (the '</think>' token)")


@dataclass
class TokenEvent:
    index: int
    token: int
    text: str                 # newly completed text (UTF-8 characters may span tokens)
    elapsed_s: float          # time for this token (sampling of it + its decode step)
    forced: bool = False      # forced by the thinking budget, not sampled
    top_logprobs: list[tuple[int, float]] | None = None
    logprob: float | None = None


@dataclass
class GenerationResult:
    prompt_ids: list[int]
    tokens: list[int]
    text: str
    stop_reason: str          # "eos" (a stop token), "stop_string", "max_tokens", "context", "interrupted"
    stop_detail: Any
    prefill_s: float
    decode_s: float
    token_times_s: list[float]
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    thinking_budget_hit_at: int | None = None
    fed: int = 0              # prompt tokens already in the session (restored), not prefilled here

    @property
    def prefilled(self) -> int:
        return len(self.prompt_ids) - self.fed

    @property
    def prefill_tok_s(self) -> float | None:
        return self.prefilled / self.prefill_s if self.prefill_s > 0 and self.prefilled else None

    @property
    def decode_tok_s(self) -> float | None:
        n = len(self.token_times_s)
        return n / self.decode_s if self.decode_s > 0 and n else None


def top_logprobs(logits: np.ndarray, k: int) -> tuple[np.ndarray, list[tuple[int, float]]]:
    """log-softmax of the raw logits in float64, and the top-k (id, logprob), best first
    (ties: lower id first)."""
    x = logits.astype(np.float64)
    m = x.max()
    logz = m + np.log(np.exp(x - m).sum())
    lp = x - logz
    k = min(k, lp.size)
    part = np.argpartition(-lp, k - 1)[:k]
    order = sorted(part.tolist(), key=lambda i: (-lp[i], i))
    return lp, [(int(i), float(lp[i])) for i in order]


def generate(session: Any, tokenizer: Any, prompt_ids: Sequence[int], cfg: GenerationConfig,
             on_token: Callable[[TokenEvent], None] | None = None,
             should_stop: Callable[[], bool] | None = None, fed: int = 0,
             first_logits: np.ndarray | None = None) -> GenerationResult:
    """fed: the first `fed` prompt tokens are already in the session (restored from a prefix cache);
    only the rest is prefilled, and penalties still see the whole prompt. fed == len(prompt_ids)
    needs first_logits, the logits after the last of them."""
    from ds4kit import _engine

    cfg.validate()
    prompt = [int(t) for t in prompt_ids]
    if not prompt:
        raise ValueError("prompt is empty: at least one token (e.g. BOS) is needed")
    params = _engine.SamplingParams(
        temperature=cfg.temperature, top_k=cfg.top_k, top_p=cfg.top_p, min_p=cfg.min_p,
        repetition_penalty=cfg.repetition_penalty, presence_penalty=cfg.presence_penalty,
        frequency_penalty=cfg.frequency_penalty, penalty_last_n=cfg.penalty_last_n, seed=cfg.seed)
    stops = set(int(t) for t in cfg.stop_token_ids)
    stop_requested = should_stop or (lambda: False)
    if stop_requested():
        return GenerationResult(prompt, [], "", "interrupted", "before prefill", 0.0, 0.0, [])

    if session.pos != fed or not 0 <= fed <= len(prompt) or (fed == len(prompt) and first_logits is None):
        raise ValueError(f"generate: the session holds {session.pos} tokens, fed={fed} of a {len(prompt)}-token "
                         "prompt (a whole fed prompt needs first_logits)")
    t0 = time.perf_counter()
    if fed < len(prompt):
        logits = session.prefill(prompt[fed:], cfg.prefill_mode, should_stop=stop_requested)
    else:
        logits = first_logits
    prefill_s = time.perf_counter() - t0
    if logits is None:  # stopped between two prefill blocks
        return GenerationResult(prompt, [], "", "interrupted", "during prefill", prefill_s, 0.0, [], fed=fed)
    sampler = _engine.Sampler(params, int(logits.shape[0]))

    history = list(prompt)
    out: list[int] = []
    times: list[float] = []
    logprob_rows: list[dict[str, Any]] = []
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = ""
    stop_reason, stop_detail = "max_tokens", cfg.max_tokens
    budget_hit = None
    in_thinking = cfg.thinking_budget is not None
    decode_t0 = time.perf_counter()
    while len(out) < cfg.max_tokens:
        if stop_requested():
            stop_reason, stop_detail = "interrupted", len(out)
            break
        t_tok = time.perf_counter()
        forced = False
        if in_thinking and len(out) >= cfg.thinking_budget:
            tok, forced, budget_hit = int(cfg.think_end_id), True, len(out)
        else:
            tok = int(sampler.sample(logits, history))
        if tok == cfg.think_end_id:
            in_thinking = False
        ev_lp = ev_top = None
        if cfg.logprobs:
            lp, ev_top = top_logprobs(logits, cfg.logprobs)
            ev_lp = float(lp[tok])
            margin = ev_top[0][1] - ev_top[1][1] if len(ev_top) > 1 else None
            logprob_rows.append({"index": len(out), "token": tok, "logprob": ev_lp, "top": ev_top,
                                 "top2_margin": margin, "forced": forced})
        out.append(tok)
        history.append(tok)
        # A stop token ends the text; it is not part of it.
        piece = "" if tok in stops else decoder.decode(bytes(tokenizer.decode([tok])))
        text += piece
        hit_string = next((s for s in cfg.stop_strings if s and s in text), None)
        at_stop_token = tok in stops
        at_context = session.pos >= session.max_ctx
        if not (at_stop_token or hit_string or at_context or len(out) >= cfg.max_tokens):
            logits = session.decode(tok)
        dt = time.perf_counter() - t_tok
        times.append(dt)
        if on_token:
            on_token(TokenEvent(len(out) - 1, tok, piece, dt, forced, ev_top, ev_lp))
        if at_stop_token:
            stop_reason, stop_detail = "eos", tok
            break
        if hit_string:
            text = text[: text.index(hit_string)]
            stop_reason, stop_detail = "stop_string", hit_string
            break
        if at_context:
            stop_reason, stop_detail = "context", session.max_ctx
            break
    text += decoder.decode(b"", final=True) if stop_reason != "stop_string" else ""
    decode_s = time.perf_counter() - decode_t0
    return GenerationResult(prompt, out, text, stop_reason, stop_detail, prefill_s, decode_s, times,
                            logprob_rows, budget_hit, fed)
