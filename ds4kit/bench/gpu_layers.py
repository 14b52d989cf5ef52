"""A decoded token's GPU time by layer, from one step's kernels in launch order, and what a model of
another layer mix would take (the issue's "milliseconds per layer and a 43-layer extrapolation").

A step's kernels (scripts/gpu-decode-profile's `launch_sequence`) are the embedding, then per layer
two hyper-connection mixes (before attention, before the experts), then the head's own mix and the
head. So the (2 i)-th `ds4_hc_mix_partial_kernel` opens layer i and the (2 n_layer)-th opens the
head: no layer boundary has to be guessed from kernel names of the layer's inside.

A layer's span is the time from its first kernel's start to the next layer's (side-stream work and
idle gaps included); its busy time is the sum of its kernels' durations.
"""
from __future__ import annotations

from dataclasses import dataclass

MIX_KERNEL = "ds4_hc_mix_partial_kernel"


@dataclass(frozen=True)
class LayerTime:
    layer: int
    ratio: int
    hash_routed: bool
    launches: int
    busy_us: float
    span_us: float | None  # None when the sequence has no start times (profiles before run 13)

    @property
    def kind(self) -> tuple[int, bool]:
        return (self.ratio, self.hash_routed)


def split_by_layer(sequence: list[dict], ratios: list[int], n_hash_layers: int) -> tuple[list[LayerTime], dict]:
    """The layers' times and the rest's (`embed` before layer 0, `head` from the head's mix on).
    Raises ValueError when the sequence does not hold 2 n_layer + 1 mixes (not one decode step)."""
    n_layer = len(ratios)
    opens = [i for i, k in enumerate(sequence) if k["kernel"].startswith(MIX_KERNEL)]
    if len(opens) != 2 * n_layer + 1:
        raise ValueError(f"a decode step of {n_layer} layers has {2 * n_layer + 1} {MIX_KERNEL} launches; "
                         f"this sequence has {len(opens)}")
    bounds = opens[0::2] + [len(sequence)]  # layer i is sequence[bounds[i]:bounds[i + 1]]; the head last
    starts = [k.get("start_us") for k in sequence]
    timed = all(s is not None for s in starts)

    def part(a: int, b: int) -> tuple[int, float, float | None]:
        busy = sum(float(k["us"]) for k in sequence[a:b])
        if not timed:
            return b - a, busy, None
        end = starts[b] if b < len(sequence) else max(starts[i] + float(sequence[i]["us"]) for i in range(a, b))
        return b - a, busy, end - starts[a]

    layers = []
    for i in range(n_layer):
        n, busy, span = part(bounds[i], bounds[i + 1])
        layers.append(LayerTime(i, int(ratios[i]), i < n_hash_layers, n, busy, span))
    rest = {}
    for name, (a, b) in {"embed": (0, bounds[0]), "head": (bounds[n_layer], len(sequence))}.items():
        n, busy, span = part(a, b)
        rest[name] = {"launches": n, "busy_us": busy, "span_us": span}
    return layers, rest


def extrapolate_ms(layers: list[LayerTime], token_ms: float, ratios: list[int], n_hash_layers: int) -> float:
    """Milliseconds a token would take with `ratios` / `n_hash_layers` instead of the measured mix:
    the measured token time with the measured layers' spans replaced by spans of the same kind
    (compress ratio, hash routing), each kind's mean. The head, embedding and token boundary are
    kept as measured. Raises ValueError naming a kind the measured file has no layer of."""
    if any(l.span_us is None for l in layers):
        raise ValueError("the sequence has no kernel start times: layer spans are unknown")
    by_kind: dict[tuple[int, bool], list[float]] = {}
    for l in layers:
        by_kind.setdefault(l.kind, []).append(l.span_us)  # type: ignore[arg-type]
    total = token_ms * 1e3 - sum(l.span_us for l in layers)  # type: ignore[misc]
    for i, r in enumerate(ratios):
        kind = (int(r), i < n_hash_layers)
        if kind not in by_kind:
            raise ValueError(f"no measured layer of compress ratio {kind[0]}"
                             f"{' with' if kind[1] else ' without'} hash routing to extrapolate layer {i} from")
        total += sum(by_kind[kind]) / len(by_kind[kind])
    return total / 1e3
