"""Plain-numpy reference dequantiser for Lucebox ROCmFP types, written from the
spec in ds4-model.md section 5 (independently of the C++ code):

    scale byte e:  e > 0x7E -> 0;  e>>3 == 0 -> (e&7) * 2^-10;
                   else (8 + (e&7)) * 2^((e>>3) - 11)
    value = integer code value * scale   (exact in float32)

    id   name               bytes  layout
    100  Q4_0_ROCMFP4        18    qs[16], e[2]; element j<16 = low nibble of qs[j],
                                   j>=16 = high nibble of qs[j-16]; nibble bit3 sign,
                                   q&7 -> {0,1,2,3,4,6,8,10}
    101  Q4_0_ROCMFP4_FAST   17    same nibbles, one e
    102  Q6_0_ROCMFPX        26    24-byte LSB-first 6-bit stream, bit5 sign, bits0-4 magnitude; e[2]
    103  Q8_0_ROCMFPX        33    int8 qs[32], one e
    104  Q3_0_ROCMFPX        14    12-byte LSB-first 3-bit stream, bit2 sign, bits0-1 -> {0,1,2,4}; e[2]
    107  Q2_0_ROCMFP2        10    qs[8], code i = (qs[i>>2] >> 2(i&3)) & 3 -> {-1,0,1,2}; e[2]

With two scale bytes, e[0] scales elements 0..15 and e[1] elements 16..31.
"""
import numpy as np

# id -> (bytes per block, bytes of codes, number of scale bytes)
LAYOUT = {
    100: (18, 16, 2),
    101: (17, 16, 1),
    102: (26, 24, 2),
    103: (33, 32, 1),
    104: (14, 12, 2),
    107: (10, 8, 2),
}
NAMES = {
    100: "Q4_0_ROCMFP4",
    101: "Q4_0_ROCMFP4_FAST",
    102: "Q6_0_ROCMFPX",
    103: "Q8_0_ROCMFPX",
    104: "Q3_0_ROCMFPX",
    107: "Q2_0_ROCMFP2",
}


def scale(e) -> np.ndarray:
    """s(e) as float32, computed in float64 (every value is exact)."""
    e = np.asarray(e).astype(np.int64)
    hi, lo = e >> 3, e & 7
    s = np.where(hi == 0, lo * 2.0**-10, (8 + lo) * np.exp2(hi - 11.0))
    return np.where(e > 0x7E, 0.0, s).astype(np.float32)


def _stream_codes(qs: np.ndarray, width: int) -> np.ndarray:
    """32 codes of `width` bits per block from an LSB-first bit stream."""
    bits = np.unpackbits(qs, axis=1, bitorder="little").astype(np.int64)
    bits = bits.reshape(qs.shape[0], 32, width)
    return (bits << np.arange(width)).sum(axis=2)


def code_values(type_id: int, qs: np.ndarray) -> np.ndarray:
    """Integer value of each of the 32 codes per block, shape (n_blocks, 32)."""
    if type_id in (100, 101):
        nib = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int64)
        mag = np.array([0, 1, 2, 3, 4, 6, 8, 10])[nib & 7]
        return np.where(nib & 8, -mag, mag)
    if type_id == 102:
        c = _stream_codes(qs, 6)
        return np.where(c & 32, -(c & 31), c & 31)
    if type_id == 103:
        return qs.view(np.int8).astype(np.int64)
    if type_id == 104:
        c = _stream_codes(qs, 3)
        mag = np.array([0, 1, 2, 4])[c & 3]
        return np.where(c & 4, -mag, mag)
    if type_id == 107:
        shifts = np.array([0, 2, 4, 6])
        c = (qs[:, :, None].astype(np.int64) >> shifts) & 3
        return c.reshape(qs.shape[0], 32) - 1
    raise ValueError(f"not a ROCmFP type id: {type_id}")


def dequantize(raw: np.ndarray, type_id: int) -> np.ndarray:
    """Dequantise raw bytes (a whole number of blocks) of a ROCmFP type to float32."""
    block_bytes, code_bytes, n_scales = LAYOUT[type_id]
    blocks = np.asarray(raw, dtype=np.uint8).reshape(-1, block_bytes)
    values = code_values(type_id, blocks[:, :code_bytes])
    e = blocks[:, code_bytes:code_bytes + n_scales]
    if n_scales == 2:
        s = np.repeat(scale(e), 16, axis=1)  # e[0] for 0..15, e[1] for 16..31
    else:
        s = np.repeat(scale(e), 32, axis=1)
    return (values.astype(np.float64) * s.astype(np.float64)).astype(np.float32).reshape(-1)
