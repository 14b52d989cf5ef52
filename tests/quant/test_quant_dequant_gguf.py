"""Standard ggml types: the engine's dequantiser must be bitwise equal to
gguf.quants.dequantize (gguf-py) on random blocks, including nan/inf/subnormal
scales that random bytes produce, and on every f16/bf16 bit pattern."""
import warnings

import gguf
import numpy as np
import pytest
from gguf.quants import dequantize as gguf_dequantize

from ds4kit import _engine

STANDARD = {
    "F32": 0, "F16": 1, "BF16": 30, "Q8_0": 8, "Q4_0": 2, "Q4_K": 12,
    "Q2_K": 10, "IQ2_XXS": 16, "MXFP4": 39,
}


def gguf_ref(raw: np.ndarray, type_id: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nan/inf scales in random blocks
        with np.errstate(all="ignore"):
            return gguf_dequantize(raw, gguf.GGMLQuantizationType(type_id)).reshape(-1)


def bits_equal(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == np.float32 and b.dtype == np.float32 and a.shape == b.shape
    bad = np.nonzero(a.view(np.uint32) != b.view(np.uint32))[0]
    assert bad.size == 0, (
        f"{bad.size} of {a.size} differ; first at {bad[0]}: "
        f"engine {a[bad[0]]!r} ({a.view(np.uint32)[bad[0]]:#010x}) vs gguf-py "
        f"{b[bad[0]]!r} ({b.view(np.uint32)[bad[0]]:#010x})"
    )


@pytest.mark.parametrize("name", sorted(STANDARD))
def test_dequant_random_blocks_bitwise_equal_gguf(name):
    type_id = STANDARD[name]
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(type_id)]
    n_blocks = 4096 if block == 1 else 400
    rng = np.random.default_rng(type_id + 1000)
    raw = rng.integers(0, 256, size=n_blocks * size, dtype=np.uint8)
    got = _engine.dequantize(type_id, raw, n_blocks * block, name=f"rand.{name}")
    bits_equal(got, gguf_ref(raw, type_id))


@pytest.mark.parametrize("name", ["F16", "BF16"])
def test_dequant_every_16bit_pattern(name):
    # Every half/bfloat16 value: zeros, subnormals, normals, inf, quiet and signalling nans.
    raw = np.arange(65536, dtype=np.uint16).view(np.uint8)
    got = _engine.dequantize(STANDARD[name], raw, 65536)
    bits_equal(got, gguf_ref(raw, STANDARD[name]))


def test_f16_special_values_by_hand():
    # 0x0001 = 2^-24 (smallest subnormal), 0x03FF = 1023*2^-24, 0x0400 = 2^-14,
    # 0x7BFF = 65504, 0x7C00 = inf, 0xFC00 = -inf, 0x8000 = -0.
    halves = np.array([0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x8000], dtype=np.uint16)
    got = _engine.dequantize(1, halves.view(np.uint8), len(halves))
    want = np.array([2.0**-24, 1023 * 2.0**-24, 2.0**-14, 65504.0, np.inf, -np.inf, -0.0], dtype=np.float32)
    bits_equal(got, want)
    nan = _engine.dequantize(1, np.array([0x7C01], dtype=np.uint16).view(np.uint8), 1)
    assert nan.view(np.uint32)[0] == 0x7F802000  # payload kept, not quietened


# gguf-py 0.19 has no quantiser for Q4_K, Q2_K, IQ2_XXS: those are covered by random blocks.
@pytest.mark.parametrize("name", ["F32", "F16", "BF16", "Q8_0", "Q4_0", "MXFP4"])
def test_dequant_quantized_real_data_matches_gguf(name):
    # Blocks produced by gguf-py's own quantiser (realistic scales, not random bytes).
    type_id = STANDARD[name]
    data = np.random.default_rng(7).standard_normal((4, 512)).astype(np.float32)
    raw = gguf.quants.quantize(data, gguf.GGMLQuantizationType(type_id))
    raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    got = _engine.dequantize(type_id, raw, data.size)
    bits_equal(got, gguf_ref(raw, type_id))
