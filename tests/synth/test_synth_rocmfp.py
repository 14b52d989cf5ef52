"""ROCmFP decoding on hand-built blocks whose values follow from ds4-model.md section 5 by hand."""
from __future__ import annotations

import numpy as np
import pytest

from ds4kit.synth import rocmfp


def test_scale_byte_formula_points():
    # s(e) = (e>>3 == 0) ? (e&7)*2^-10 : (8+(e&7)) * 2^((e>>3)-11); bytes above 0x7E decode as 0
    assert rocmfp.scale_of_byte(0) == 0.0
    assert rocmfp.scale_of_byte(3) == 3 * 2.0 ** -10
    assert rocmfp.scale_of_byte(8) == 8 * 2.0 ** -10      # (8+0) * 2^(1-11)
    assert rocmfp.scale_of_byte(0x3A) == 10 * 2.0 ** -4   # e>>3 = 7, e&7 = 2
    assert rocmfp.scale_of_byte(0x7E) == 14 * 2.0 ** 4
    assert rocmfp.scale_of_byte(0x7F) == 0.0 and rocmfp.scale_of_byte(0xFF) == 0.0


def test_fp4_block_nibbles_signs_and_two_scales():
    qs = bytes([0x91, 0x0F] + [0x00] * 14)   # elem0 = 1, elem16 = 9 (sign|1); elem1 = 15 (sign|7), elem17 = 0
    e = bytes([0x40, 0x41])                   # s = 8*2^-3 = 1.0 for the first half, 9*2^-3 for the second
    out = rocmfp.dequantize(qs + e, 100)
    assert out[0] == 1.0 and out[1] == -10.0
    assert out[16] == -1.0 * 9 / 8 and out[17] == 0.0
    fast = rocmfp.dequantize(qs + e[:1], 101)  # one scale byte for all 32
    assert fast[16] == -1.0 and fast[1] == -10.0


def test_fp3_bit_stream_is_lsb_first():
    codes = [1, 6, 3, 7, 0, 5, 2, 4] * 4      # 6 = sign|2, 7 = sign|4 (mag code 3), 5 = sign|1, 4 = -0
    bits = sum(c << (3 * i) for i, c in enumerate(codes))
    qs = bits.to_bytes(12, "little")
    out = rocmfp.dequantize(qs + bytes([0x40, 0x40]), 104)
    np.testing.assert_array_equal(out[:8], [1, -2, 4, -4, 0, -1, 2, 0])


def test_fp6_and_fp8_values():
    codes = [31, 32 | 31, 5, 32 | 1] + [0] * 28
    bits = sum(c << (6 * i) for i, c in enumerate(codes))
    out6 = rocmfp.dequantize(bits.to_bytes(24, "little") + bytes([0x40, 0x40]), 102)
    np.testing.assert_array_equal(out6[:4], [31, -31, 5, -1])
    q8 = np.array([127, -127, -1, 0] + [3] * 28, dtype=np.int8).tobytes()
    out8 = rocmfp.dequantize(q8 + bytes([0x38]), 103)  # s = 8 * 2^-4 = 0.5
    np.testing.assert_array_equal(out8[:5], [63.5, -63.5, -0.5, 0, 1.5])


@pytest.mark.parametrize("codebook", [rocmfp.FP2_CODEBOOK_FORK, rocmfp.FP2_CODEBOOK_SPEC])
def test_fp2_code_positions(codebook):
    codes = [0, 1, 2, 3] * 8
    qs = bytes([0b11100100] * 8)             # element i at bits 2*(i&3) of byte i>>2
    out = rocmfp.dequantize(qs + bytes([0x40, 0x41]), 107, fp2_codebook=codebook)
    np.testing.assert_array_equal(out[:16], [codebook[c] for c in codes[:16]])
    np.testing.assert_array_equal(out[16:], [codebook[c] * 9 / 8 for c in codes[16:]])


@pytest.mark.parametrize("type_id", sorted(rocmfp.LAYOUTS))
def test_random_blocks_pack_and_unpack_consistently(type_id):
    layout = rocmfp.LAYOUTS[type_id]
    rng = np.random.default_rng(type_id)
    raw = np.frombuffer(rocmfp.random_blocks(rng, 64, type_id, 0.02), np.uint8).reshape(64, layout.block_bytes)
    codes = rocmfp._unpack_codes(raw, layout)
    np.testing.assert_array_equal(rocmfp._pack_codes(codes, layout), raw[:, :layout.code_bytes])
    assert (raw[:, layout.code_bytes:] <= rocmfp.MAX_SCALE_BYTE).all() and (raw[:, layout.code_bytes:] > 0).all()


@pytest.mark.parametrize("type_id", [101, 107])
def test_random_blocks_in_chunks_are_the_unchunked_blocks_codes(type_id, monkeypatch):
    """Codes are drawn chunk by chunk (a full-width expert tensor at once ran a writer out of
    memory): chunks of 7 blocks give the same codes as one chunk (107 draws them by rng.choice,
    whose stream does not depend on how it is split), and the scales still give about `std`."""
    layout = rocmfp.LAYOUTS[type_id]
    whole = np.frombuffer(rocmfp.random_blocks(np.random.default_rng(3), 50, type_id, 0.02), np.uint8)
    monkeypatch.setattr(rocmfp, "_CHUNK_BLOCKS", 7)
    chunked = np.frombuffer(rocmfp.random_blocks(np.random.default_rng(3), 50, type_id, 0.02), np.uint8)
    whole, chunked = whole.reshape(50, layout.block_bytes), chunked.reshape(50, layout.block_bytes)
    if type_id == 107:
        np.testing.assert_array_equal(chunked[:, :layout.code_bytes], whole[:, :layout.code_bytes])
    rms = float(np.sqrt(np.mean(rocmfp.dequantize(chunked.tobytes(), type_id) ** 2)))
    assert 0.01 < rms < 0.04, rms


def test_truncated_block_buffer_is_rejected():
    with pytest.raises(ValueError, match="Q6_0_ROCMFPX: 25 bytes"):
        rocmfp.dequantize(bytes(25), 102)
