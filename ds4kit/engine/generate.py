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
    speculation: dict[str, Any] | None = None       # drafter, width policy and statistics (speculative runs)
    spec_decisions: list[dict[str, Any]] | None = None  # the width policy's decision at every step

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
             first_logits: np.ndarray | None = None, speculation: Any = None) -> GenerationResult:
    """fed: the first `fed` prompt tokens are already in the session (restored from a prefix cache);
    only the rest is prefilled, and penalties still see the whole prompt. fed == len(prompt_ids)
    needs first_logits, the logits after the last of them. speculation: a
    ds4kit.engine.speculative.Speculation (the session must capture what its drafter reads);
    greedy output is then token for token the same, sampled output has the same distribution."""
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
    state = _Emitter(tokenizer, cfg, stops, prompt, session.max_ctx)
    decode_t0 = time.perf_counter()
    if speculation is None:
        sampler = _engine.Sampler(params, int(logits.shape[0]))
        loop = _greedy_loop if _plain_greedy(cfg) else _plain_loop
        loop(session, sampler, logits, state, cfg, on_token, stop_requested)
    else:
        state.spec = speculation.start(session, params)
        _speculative_loop(session, state.spec, logits, state, cfg, on_token, stop_requested)
        speculation.finished(state.spec)
    decode_s = time.perf_counter() - decode_t0
    stop_reason, stop_detail, text = state.stop_reason, state.stop_detail, state.text
    text += state.decoder.decode(b"", final=True) if stop_reason != "stop_string" else ""
    result = GenerationResult(prompt, state.out, text, stop_reason, stop_detail, prefill_s, decode_s, state.times,
                              state.logprob_rows, state.budget_hit, fed)
    if state.spec is not None:
        from ds4kit.engine.speculative import summarize

        result.speculation = {**speculation.describe(),
                              **summarize(state.spec.stats(), state.spec.decisions(), state.spec.policy())}
        result.spec_decisions = state.spec.decisions()
    return result


class _Emitter:
    """Everything that happens to a token once it is chosen, whichever loop chose it: the thinking
    budget, logprobs, text, stop tokens and strings, the context limit, the event."""

    def __init__(self, tokenizer: Any, cfg: GenerationConfig, stops: set[int], prompt: list[int], max_ctx: int):
        self.tokenizer, self.cfg, self.stops = tokenizer, cfg, stops
        self.n_prompt, self.max_ctx = len(prompt), max_ctx
        self.history = list(prompt)
        self.out: list[int] = []
        self.times: list[float] = []
        self.logprob_rows: list[dict[str, Any]] = []
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.text = ""
        self.stop_reason: str = "max_tokens"
        self.stop_detail: Any = cfg.max_tokens
        self.budget_hit: int | None = None
        self.in_thinking = cfg.thinking_budget is not None
        self.spec: Any = None
        self._event: TokenEvent | None = None

    def forced_now(self) -> bool:
        """Whether the token at the next index must be the thinking budget's end."""
        return self.in_thinking and len(self.out) >= self.cfg.thinking_budget

    def tokens_before_forced(self) -> int | None:
        """How many tokens may be chosen freely before a forced one (None: no budget pending)."""
        return self.cfg.thinking_budget - len(self.out) if self.in_thinking else None

    def interrupt(self) -> None:
        self.stop_reason, self.stop_detail = "interrupted", len(self.out)

    def record(self, tok: int, logits: np.ndarray | None, forced: bool) -> bool:
        """Record one token; True when generation stops at it. `sent` then times it and tells."""
        cfg = self.cfg
        if forced:
            self.budget_hit = len(self.out)
        if tok == cfg.think_end_id:
            self.in_thinking = False
        ev_lp = ev_top = None
        if cfg.logprobs:
            lp, ev_top = top_logprobs(logits, cfg.logprobs)
            ev_lp = float(lp[tok])
            margin = ev_top[0][1] - ev_top[1][1] if len(ev_top) > 1 else None
            self.logprob_rows.append({"index": len(self.out), "token": tok, "logprob": ev_lp, "top": ev_top,
                                      "top2_margin": margin, "forced": forced})
        self.out.append(tok)
        self.history.append(tok)
        # A stop token ends the text; it is not part of it.
        piece = "" if tok in self.stops else self.decoder.decode(bytes(self.tokenizer.decode([tok])))
        self.text += piece
        self._event = TokenEvent(len(self.out) - 1, tok, piece, 0.0, forced, ev_top, ev_lp)
        hit_string = next((s for s in cfg.stop_strings if s and s in self.text), None)
        # Before token i is fed the session holds the prompt and tokens 0 .. i-1: full at max_ctx.
        at_context = self.n_prompt + len(self.out) - 1 >= self.max_ctx
        if tok in self.stops:
            self.stop_reason, self.stop_detail = "eos", tok
        elif hit_string:
            self.text = self.text[: self.text.index(hit_string)]
            self.stop_reason, self.stop_detail = "stop_string", hit_string
        elif at_context:
            self.stop_reason, self.stop_detail = "context", self.max_ctx
        elif len(self.out) >= cfg.max_tokens:
            self.stop_reason, self.stop_detail = "max_tokens", cfg.max_tokens
        else:
            return False
        return True

    def sent(self, dt: float, on_token: Callable[[TokenEvent], None] | None) -> None:
        self.times.append(dt)
        self._event.elapsed_s = dt
        if on_token:
            on_token(self._event)


def _plain_loop(session: Any, sampler: Any, logits: np.ndarray, st: _Emitter, cfg: GenerationConfig,
                on_token: Callable[[TokenEvent], None] | None, stop_requested: Callable[[], bool]) -> None:
    while len(st.out) < cfg.max_tokens:
        if stop_requested():
            return st.interrupt()
        t_tok = time.perf_counter()
        forced = st.forced_now()
        tok = int(cfg.think_end_id) if forced else int(sampler.sample(logits, st.history))
        stop = st.record(tok, logits, forced)
        if not stop:
            logits = session.decode(tok)
        st.sent(time.perf_counter() - t_tok, on_token)  # the token's time includes its decode step
        if stop:
            return


def _plain_greedy(cfg: GenerationConfig) -> bool:
    """Whether each token is the argmax of the raw logits and nothing else reads them: then the
    session finds the argmax where the logits are (Session.decode_top) and only the id comes back."""
    return (cfg.temperature <= 0 and cfg.repetition_penalty == 1 and cfg.presence_penalty == 0
            and cfg.frequency_penalty == 0 and not cfg.logprobs)


def _greedy_loop(session: Any, sampler: Any, logits: np.ndarray, st: _Emitter, cfg: GenerationConfig,
                 on_token: Callable[[TokenEvent], None] | None, stop_requested: Callable[[], bool]) -> None:
    """_plain_loop for _plain_greedy configurations: the same tokens (the session's argmax breaks
    ties to the lower id as the greedy sampler does) and the same session at the end, without the
    logits' round trip per token. A session that chains greedy steps on its device
    (`decode_greedy`, `greedy_chain` > 1) runs that many between returns to the host; the tokens
    a chain fed past a stop are taken back with rewind, so the session ends where one-by-one
    decoding's would."""
    if cfg.max_tokens == 0:
        return
    chain = getattr(session, "greedy_chain", 1) if hasattr(session, "decode_greedy") else 1
    queue = [int(sampler.sample(logits, st.history))]  # chosen tokens: all but the last are fed
    step_s = 0.0
    while True:
        for k, tok in enumerate(queue):
            fed_after = len(queue) - 1 - k  # tokens the chain fed after this one
            if stop_requested():
                if fed_after:
                    session.rewind(fed_after)
                return st.interrupt()
            forced = st.forced_now()  # only a queue's last token can be (chains stop before one)
            if forced:
                tok = int(cfg.think_end_id)
            stop = st.record(tok, None, forced)
            st.sent(step_s / len(queue), on_token)  # a chain's tokens share its time
            if stop:
                if fed_after:
                    session.rewind(fed_after)
                return
        # The last token is pending: feed it, and run up to `chain` steps, no further than
        # max_tokens, the context and the token before a forced one (which may then replace the
        # chain's last, pending token).
        n = min(chain, cfg.max_tokens - len(st.out), session.max_ctx - session.pos)
        free = st.tokens_before_forced()
        if free is not None:
            n = min(n, free + 1)
        t0 = time.perf_counter()
        if n > 1:
            queue = [int(t) for t in session.decode_greedy(tok, n)]
        else:
            queue = [int(session.decode_top(tok, 1)[0][0])]
        step_s = time.perf_counter() - t0


def _speculative_loop(session: Any, spec: Any, logits: np.ndarray, st: _Emitter, cfg: GenerationConfig,
                      on_token: Callable[[TokenEvent], None] | None, stop_requested: Callable[[], bool]) -> None:
    """Each step emits the accepted candidates and the next token (ds4kit._engine.Speculator). A
    stop inside a step takes the rest back (keep_first), so the session ends where plain decoding's
    would; a forced token replaces the pending one (the step's limit makes it the step's last)."""
    if cfg.max_tokens == 0:
        return
    t0 = time.perf_counter()
    queue = [(int(spec.begin(logits, st.history[:])), logits)]
    step_s, from_step = time.perf_counter() - t0, False
    while True:
        for k, (tok, row) in enumerate(queue):
            if stop_requested():
                if from_step and k > 0:
                    spec.keep_first(k)
                return st.interrupt()
            forced = st.forced_now()
            if forced:
                tok = int(cfg.think_end_id)
                spec.replace_pending(tok)
            stop = st.record(tok, row, forced)
            st.sent(step_s / len(queue), on_token)  # a step's tokens share its time
            if stop:
                if from_step and k + 1 < len(queue):
                    spec.keep_first(k + 1)
                return
        if stop_requested():
            return st.interrupt()
        # At most the rest of max_tokens, and up to a forced token (then the step's last).
        limit = cfg.max_tokens - len(st.out)
        free = st.tokens_before_forced()
        if free is not None:
            limit = min(limit, free + 1)
        t0 = time.perf_counter()
        res = spec.step(limit, bool(cfg.logprobs))
        step_s, from_step = time.perf_counter() - t0, True
        rows = res["rows"]
        queue = [(int(t), rows[i] if rows is not None else None) for i, t in enumerate(res["tokens"])]
