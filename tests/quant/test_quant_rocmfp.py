"""ROCmFP dequantisation: the C++ engine and the numpy spec reference against
hand-computed vectors, then against each other on random blocks.

Every expected float below was computed by hand from the spec (ds4-model.md s.5):
s(e) = (e>>3 == 0) ? (e&7)*2^-10 : (8+(e&7))*2^((e>>3)-11), e > 0x7E -> 0.
Scales used here:
  0x00 -> 0            0x01 -> 2^-10 = 0.0009765625     0x02 -> 2/1024 = 0.001953125
  0x07 -> 7/1024 = 0.0068359375 (largest subnormal-range)  0x08 -> 8/1024 = 0.0078125
  0x0A -> 10/1024 = 0.009765625   0x30 -> 8*2^-5 = 0.25    0x38 -> 8*2^-4 = 0.5
  0x39 -> 9*2^-4 = 0.5625   0x40 -> 8*2^-3 = 1.0   0x41 -> 9*2^-3 = 1.125
  0x7E -> 14*2^4 = 224 (largest)   0x7F, 0x80, 0xFF -> 0
"""
import numpy as np
import pytest

from ds4kit import _engine
from quant_rocmfp_reference import LAYOUT, NAMES, dequantize as ref_dequantize, scale as ref_scale

U8 = np.uint8


def engine_dequant(type_id: int, blocks: list[list[int]]) -> np.ndarray:
    raw = np.array([b for blk in blocks for b in blk], dtype=U8)
    return _engine.dequantize(type_id, raw, 32 * len(blocks), name=f"hand.{NAMES[type_id]}")


def check(type_id: int, blocks: list[list[int]], expected: list[float]) -> None:
    for blk in blocks:
        assert len(blk) == LAYOUT[type_id][0]
    want = np.array(expected, dtype=np.float32)
    got = engine_dequant(type_id, blocks)
    np.testing.assert_array_equal(got, want, err_msg=f"engine {NAMES[type_id]}")
    ref = ref_dequantize(np.array([b for blk in blocks for b in blk], dtype=U8), type_id)
    np.testing.assert_array_equal(ref, want, err_msg=f"numpy reference {NAMES[type_id]}")


# --- scales -------------------------------------------------------------------

SCALE_CASES = {
    0x00: 0.0, 0x01: 0.0009765625, 0x02: 0.001953125, 0x07: 0.0068359375,
    0x08: 0.0078125, 0x0A: 0.009765625, 0x0F: 0.0146484375,  # 15/1024
    0x10: 0.015625,  # 8*2^-9
    0x30: 0.25, 0x38: 0.5, 0x39: 0.5625, 0x40: 1.0, 0x41: 1.125,
    0x77: 120.0,  # 15*2^3
    0x78: 128.0,  # 8*2^4
    0x7E: 224.0, 0x7F: 0.0, 0x80: 0.0, 0xC3: 0.0, 0xFF: 0.0,
}


@pytest.mark.parametrize("e", sorted(SCALE_CASES))
def test_rocmfp_scale_hand_values(e):
    # Q8_0_ROCMFPX with every code 1 dequantises to s(e) itself.
    got = engine_dequant(103, [[1] * 32 + [e]])
    assert np.all(got == np.float32(SCALE_CASES[e])), (hex(e), got[0])
    assert ref_scale(e) == np.float32(SCALE_CASES[e])


def test_rocmfp_scale_all_256_bytes_match_reference():
    raw = np.array([[1] * 32 + [e] for e in range(256)], dtype=U8).reshape(-1)
    got = _engine.dequantize(103, raw, 32 * 256).reshape(256, 32)[:, 0]
    np.testing.assert_array_equal(got, ref_scale(np.arange(256)))
    assert np.all(got[0x7F:] == 0) and np.all(got[1:0x7F] > 0)


# --- Q4_0_ROCMFP4 (100) ------------------------------------------------------

def test_q4_0_rocmfp4_every_code_both_halves():
    # Block 1: qs[j] = j | (15-j)<<4: elements 0..15 have codes 0..15 (e[0]=0x38, 0.5),
    # elements 16..31 codes 15..0 (e[1]=0x01, 2^-10, subnormal range).
    blk1 = [j | ((15 - j) << 4) for j in range(16)] + [0x38, 0x01]
    # Block 2: qs = 0x7F: low nibble 15 (-10), high nibble 7 (+10); e[0]=0x7E (224), e[1]=0x7F (0).
    blk2 = [0x7F] * 16 + [0x7E, 0x7F]
    # Block 3: codes 1 and 9 (+1/-1) with e[0]=0x00 (0) and e[1]=0x07 (7/1024).
    blk3 = [0x91] * 16 + [0x00, 0x07]
    expected = (
        # codes 0..15 -> 0,1,2,3,4,6,8,10,-0,-1,-2,-3,-4,-6,-8,-10 times 0.5
        [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -5.0]
        # codes 15..0 -> -10,-8,-6,-4,-3,-2,-1,-0,10,8,6,4,3,2,1,0 times 2^-10
        + [-0.009765625, -0.0078125, -0.005859375, -0.00390625, -0.0029296875, -0.001953125,
           -0.0009765625, 0.0, 0.009765625, 0.0078125, 0.005859375, 0.00390625, 0.0029296875,
           0.001953125, 0.0009765625, 0.0]
        + [-2240.0] * 16  # -10 * 224
        + [0.0] * 16      # e[1] = 0x7F reads as 0
        + [0.0] * 16      # e[0] = 0: +1 * 0
        + [-0.0068359375] * 16  # code 9 = -1, times 7/1024
    )
    check(100, [blk1, blk2, blk3], expected)


# --- Q4_0_ROCMFP4_FAST (101) -------------------------------------------------

def test_q4_0_rocmfp4_fast_every_code_one_scale():
    # qs[j] = (15-j) | j<<4: elements 0..15 codes 15..0, elements 16..31 codes 0..15; e=0x07.
    blk1 = [(15 - j) | (j << 4) for j in range(16)] + [0x07]
    blk2 = [0x44] * 16 + [0x7E]  # code 4 -> 4 * 224 = 896 everywhere
    blk3 = [0x77] * 16 + [0x80]  # e >= 0x7F -> 0
    s7 = [-70, -56, -42, -28, -21, -14, -7, 0, 70, 56, 42, 28, 21, 14, 7, 0]  # code value * 7, /1024 below
    expected = (
        [-0.068359375, -0.0546875, -0.041015625, -0.02734375, -0.0205078125, -0.013671875,
         -0.0068359375, 0.0, 0.068359375, 0.0546875, 0.041015625, 0.02734375, 0.0205078125,
         0.013671875, 0.0068359375, 0.0]
        + [0.0, 0.0068359375, 0.013671875, 0.0205078125, 0.02734375, 0.041015625, 0.0546875,
           0.068359375, 0.0, -0.0068359375, -0.013671875, -0.0205078125, -0.02734375,
           -0.041015625, -0.0546875, -0.068359375]
        + [896.0] * 32
        + [0.0] * 32
    )
    assert [v * 1024 for v in expected[:16]] == [float(v) for v in s7]
    check(101, [blk1, blk2, blk3], expected)


# --- Q2_0_ROCMFP2 (107) ------------------------------------------------------

def test_q2_0_rocmfp2_every_code_both_halves():
    # 0xE4 = 0b11_10_01_00: codes 0,1,2,3 (low bits first) -> -1,0,1,2.
    blk1 = [0xE4] * 8 + [0x40, 0x0A]  # e[0] = 1.0, e[1] = 10/1024
    # 0x1B = 0b00_01_10_11: codes 3,2,1,0 -> 2,1,0,-1; e[0]=0x7E (224), e[1]=0x00 (0).
    blk2 = [0x1B] * 8 + [0x7E, 0x00]
    # Only qs[4] (elements 16..19) differs from zero codes: 0x03 -> codes 3,0,0,0; e[1]=0xFF (0).
    blk3 = [0x00] * 4 + [0x03, 0x00, 0x00, 0x00] + [0x01, 0xFF]
    expected = (
        [-1.0, 0.0, 1.0, 2.0] * 4
        + [-0.009765625, 0.0, 0.009765625, 0.01953125] * 4
        + [448.0, 224.0, 0.0, -224.0] * 4
        + [0.0] * 16
        + [-0.0009765625] * 16  # code 0 = -1 times 2^-10
        + [0.0] * 16            # e[1] = 0xFF reads as 0
    )
    check(107, [blk1, blk2, blk3], expected)


# --- Q3_0_ROCMFPX (104) ------------------------------------------------------

def test_q3_0_rocmfpx_every_code_straddling_bytes():
    # Codes 0..7 packed LSB-first in 24 bits: sum(c << 3c) = 0xFAC688 -> bytes 88 C6 FA.
    # Codes 2 (bits 6-8) and 5 (bits 15-17) straddle a byte boundary.
    blk1 = [0x88, 0xC6, 0xFA] * 4 + [0x30, 0x7E]  # e[0] = 0.25, e[1] = 224
    # Codes 7..0: 7 | 6<<3 | 5<<6 | 4<<9 | 3<<12 | 2<<15 | 1<<18 = 0x053977 -> 77 39 05.
    blk2 = [0x77, 0x39, 0x05] * 4 + [0x07, 0xFF]  # e[0] = 7/1024, e[1] = 0
    # codes 0..7 -> 0,1,2,4,-0,-1,-2,-4
    expected = (
        [0.0, 0.25, 0.5, 1.0, 0.0, -0.25, -0.5, -1.0] * 2
        + [0.0, 224.0, 448.0, 896.0, 0.0, -224.0, -448.0, -896.0] * 2
        # codes 7..0 -> -4,-2,-1,-0,4,2,1,0 times 7/1024
        + [-0.02734375, -0.013671875, -0.0068359375, 0.0, 0.02734375, 0.013671875, 0.0068359375, 0.0] * 2
        + [0.0] * 16
    )
    check(104, [blk1, blk2], expected)


# --- Q6_0_ROCMFPX (102) ------------------------------------------------------

# Four 6-bit codes a,b,c,d per 3 bytes, LSB-first: a | b<<6 | c<<12 | d<<18.
# Block A holds codes 0..31 in order, block B codes 32..63 (all 64 codes).
Q6_CODES_0_31 = [0x40, 0x20, 0x0C, 0x44, 0x61, 0x1C, 0x48, 0xA2, 0x2C, 0x4C, 0xE3, 0x3C,
                 0x50, 0x24, 0x4D, 0x54, 0x65, 0x5D, 0x58, 0xA6, 0x6D, 0x5C, 0xE7, 0x7D]
Q6_CODES_32_63 = [0x60, 0x28, 0x8E, 0x64, 0x69, 0x9E, 0x68, 0xAA, 0xAE, 0x6C, 0xEB, 0xBE,
                  0x70, 0x2C, 0xCF, 0x74, 0x6D, 0xDF, 0x78, 0xAE, 0xEF, 0x7C, 0xEF, 0xFF]


def test_q6_0_rocmfpx_every_code_both_halves():
    # First group by hand: 0 | 1<<6 | 2<<12 | 3<<18 = 0x0C2040 -> 40 20 0C.
    assert Q6_CODES_0_31[:3] == [0x40, 0x20, 0x0C]
    blk_a = Q6_CODES_0_31 + [0x39, 0x02]  # e[0] = 0.5625, e[1] = 2/1024
    blk_b = Q6_CODES_32_63 + [0x7E, 0x7F]  # e[0] = 224, e[1] = 0
    expected = (
        # codes 0..15 times 0.5625
        [0.0, 0.5625, 1.125, 1.6875, 2.25, 2.8125, 3.375, 3.9375, 4.5, 5.0625, 5.625, 6.1875,
         6.75, 7.3125, 7.875, 8.4375]
        # codes 16..31 times 2/1024
        + [0.03125, 0.033203125, 0.03515625, 0.037109375, 0.0390625, 0.041015625, 0.04296875,
           0.044921875, 0.046875, 0.048828125, 0.05078125, 0.052734375, 0.0546875, 0.056640625,
           0.05859375, 0.060546875]
        # codes 32..47 = -0..-15 times 224
        + [0.0, -224.0, -448.0, -672.0, -896.0, -1120.0, -1344.0, -1568.0, -1792.0, -2016.0,
           -2240.0, -2464.0, -2688.0, -2912.0, -3136.0, -3360.0]
        + [0.0] * 16  # codes 48..63 with e[1] = 0x7F -> 0
    )
    check(102, [blk_a, blk_b], expected)


def test_q6_0_rocmfpx_second_half_negative_codes():
    # Block B again with a live second-half scale e[1] = 0x40 (1.0): codes 48..63 = -16..-31.
    check(102, [Q6_CODES_32_63 + [0x00, 0x40]], [0.0] * 16 + [float(-v) for v in range(16, 32)])


# --- Q8_0_ROCMFPX (103) ------------------------------------------------------

def test_q8_0_rocmfpx_every_code():
    # All 256 int8 codes over 8 blocks with e = 0x40 (1.0): each value is its code.
    codes = list(range(-128, 128))
    blocks = [[c & 0xFF for c in codes[32 * i:32 * i + 32]] + [0x40] for i in range(8)]
    check(103, blocks, [float(c) for c in codes])
    # A few with e = 0x41 (1.125): -128 -> -144, -127 -> -142.875, 127 -> 142.875, 2 -> 2.25.
    blk = [0x80, 0x81, 0x7F, 0x02] + [0] * 28 + [0x41]
    check(103, [blk], [-144.0, -142.875, 142.875, 2.25] + [0.0] * 28)


# --- engine vs numpy reference on random blocks --------------------------------

@pytest.mark.parametrize("type_id", sorted(LAYOUT))
def test_rocmfp_random_blocks_match_reference_bitwise(type_id):
    rng = np.random.default_rng(type_id)
    n_blocks = 512
    raw = rng.integers(0, 256, size=n_blocks * LAYOUT[type_id][0], dtype=U8)
    got = _engine.dequantize(type_id, raw, 32 * n_blocks)
    ref = ref_dequantize(raw, type_id)
    np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))
