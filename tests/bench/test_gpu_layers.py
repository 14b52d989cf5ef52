"""Per-layer GPU time from a decode step's launch sequence, and the 43-layer extrapolation
(ds4kit/bench/gpu_layers.py): against sums worked out by hand on a made-up step, and on the H200
profile committed from run 13."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ds4kit.bench.gpu_layers import extrapolate_ms, split_by_layer

MIX = "ds4_hc_mix_partial_kernel<1u>"
RUN13 = Path(__file__).resolve().parents[2] / "reports/examples/gpu-speed-h200/13-q8-walk-rejected.json"


def _step():
    # (kernel, start, duration) in us: embed; layer 0 (ratio 0, hash) 10..40; layer 1 (ratio 4) 40..100;
    # the head 100..130. The side-stream kernel at 22 overlaps layer 0's matmul.
    ks = [("embed", 0, 5), (MIX, 10, 2), ("matmul", 13, 10), ("hc_split", 22, 12), (MIX, 26, 2), ("moe", 29, 8),
          (MIX, 40, 2), ("attention", 43, 30), (MIX, 75, 2), ("moe", 78, 20),
          (MIX, 100, 2), ("head", 103, 27)]
    return [{"kernel": k, "start_us": float(t), "us": float(d)} for k, t, d in ks]


def test_layers_split_at_every_second_mix_with_spans_and_busy_sums():
    layers, rest = split_by_layer(_step(), [0, 4], n_hash_layers=1)
    assert [(l.layer, l.ratio, l.hash_routed, l.launches) for l in layers] == [(0, 0, True, 5), (1, 4, False, 4)]
    assert [l.span_us for l in layers] == [30.0, 60.0]
    assert [l.busy_us for l in layers] == [2 + 10 + 12 + 2 + 8, 2 + 30 + 2 + 20]
    assert rest["embed"] == {"launches": 1, "busy_us": 5.0, "span_us": 10.0}
    assert rest["head"] == {"launches": 2, "busy_us": 29.0, "span_us": 30.0}  # to the head's end, 130


def test_extrapolation_keeps_the_rest_and_swaps_layers_by_kind():
    layers, _ = split_by_layer(_step(), [0, 4], n_hash_layers=1)
    # token 0.2 ms: 200 - (30 + 60) = 110 us outside the layers; then ratio-0 hash layers of 30 us
    # and ratio-4 plain layers of 60 us: [0, 0, 4, 4, 4] with 2 hash layers.
    assert extrapolate_ms(layers, 0.2, [0, 0, 4, 4, 4], 2) == pytest.approx((110 + 2 * 30 + 3 * 60) / 1e3)
    with pytest.raises(ValueError, match="ratio 4 with hash routing .* layer 1"):
        extrapolate_ms(layers, 0.2, [0, 4], 2)


def test_a_sequence_that_is_not_one_step_is_refused():
    with pytest.raises(ValueError, match="has 5 ds4_hc_mix_partial_kernel launches; this sequence has 4"):
        split_by_layer(_step()[:-2], [0, 4], 1)
    untimed = [{k: v for k, v in x.items() if k != "start_us"} for x in _step()]
    layers, _ = split_by_layer(untimed, [0, 4], 1)
    assert layers[1].span_us is None and layers[1].busy_us == 54.0
    with pytest.raises(ValueError, match="no kernel start times"):
        extrapolate_ms(layers, 0.2, [0, 4], 1)


def test_the_committed_h200_step_splits_into_its_8_layers():
    d = json.loads(RUN13.read_text())
    layers, rest = split_by_layer(d["launch_sequence"], [0, 0, 4, 128, 4, 128, 4, 128], 3)
    assert sum(l.launches for l in layers) + rest["embed"]["launches"] + rest["head"]["launches"] == 301
    assert [l.ratio for l in layers] == [0, 0, 4, 128, 4, 128, 4, 128]
    total = sum(float(k["us"]) for k in d["launch_sequence"])
    assert sum(l.busy_us for l in layers) + rest["embed"]["busy_us"] + rest["head"]["busy_us"] == pytest.approx(total)
    assert rest["head"]["launches"] < 10 and all(25 <= l.launches <= 45 for l in layers)
