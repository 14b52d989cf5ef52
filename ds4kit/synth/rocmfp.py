"""Lucebox ROCmFP block formats (type ids 100-104, 107): random valid blocks and a numpy decoder.

gguf-py does not know these types, so synthetic files hold random *valid* blocks
whose scale byte is chosen to give the wanted weight magnitude; the model's
weights are then by definition what the blocks decode to (`dequantize`).

Layouts follow ds4-model.md section 5, cross-checked against the ROCmFPX ggml
fork. Where they disagree we follow the spec (as the engine's C++ decoder in
engine/src/quant/rocmfp_codes.h does) and never emit the disputed codes where
that is possible:
  * Q2_0_ROCMFP2 (107): the fork's frozen codebook is {-4, -1, +1, +4};
    ds4-model.md says {-1, 0, 1, 2}, which is also what a public reader audit of
    the DS4 ROCMFP2 files' writer found. Both read the same bytes; only the values
    differ, so this decoder takes the codebook as an argument (default: spec).
  * Q6_0_ROCMFPX (102): the fork decodes "-0" (sign bit, magnitude 0) as -32 in
    one kernel and 0 in another; the generator never writes that code.
All blocks are little-endian, 32 weights each; codes come first, scale bytes last.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

QK = 32
MAX_SCALE_BYTE = 0x7E  # bytes above this decode as scale 0

FP2_CODEBOOK_FORK = (-4.0, -1.0, 1.0, 4.0)
FP2_CODEBOOK_SPEC = (-1.0, 0.0, 1.0, 2.0)
FP4_MAGNITUDES = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0)
FP3_MAGNITUDES = (0.0, 1.0, 2.0, 4.0)


def scale_of_byte(e: np.ndarray | int) -> np.ndarray:
    """UE4M3-like scale: s(e) = (e>>3 == 0) ? (e&7)*2^-10 : (8+(e&7)) * 2^((e>>3)-11); e > 0x7E -> 0."""
    e = np.asarray(e, dtype=np.int64)
    hi, lo = e >> 3, e & 7
    s = np.where(hi == 0, lo * 2.0 ** -10, (8 + lo) * np.exp2(hi - 11.0))
    return np.where(e > MAX_SCALE_BYTE, 0.0, s)


_SCALE_TABLE = scale_of_byte(np.arange(MAX_SCALE_BYTE + 1))


@dataclass(frozen=True)
class RocmLayout:
    type_id: int
    name: str
    block_bytes: int
    code_bytes: int      # packed codes at the start of the block
    n_scales: int        # scale bytes after the codes: 2 = one per half block, 1 = whole block
    bits: int            # bits per code


LAYOUTS = {
    100: RocmLayout(100, "Q4_0_ROCMFP4", 18, 16, 2, 4),
    101: RocmLayout(101, "Q4_0_ROCMFP4_FAST", 17, 16, 1, 4),
    102: RocmLayout(102, "Q6_0_ROCMFPX", 26, 24, 2, 6),
    103: RocmLayout(103, "Q8_0_ROCMFPX", 33, 32, 1, 8),
    104: RocmLayout(104, "Q3_0_ROCMFPX", 14, 12, 2, 3),
    107: RocmLayout(107, "Q2_0_ROCMFP2", 10, 8, 2, 2),
}


# --- code value tables (index = raw code) ---------------------------------------------------
def code_values(type_id: int, fp2_codebook=FP2_CODEBOOK_SPEC) -> np.ndarray:
    if type_id in (100, 101):
        q = np.arange(16)
        mag = np.asarray(FP4_MAGNITUDES)[q & 7]
        return np.where(q & 8, -mag, mag)
    if type_id == 104:
        q = np.arange(8)
        mag = np.asarray(FP3_MAGNITUDES)[q & 3]
        return np.where(q & 4, -mag, mag)
    if type_id == 102:
        q = np.arange(64)
        mag = (q & 31).astype(np.float64)
        return np.where(q & 32, -mag, mag)  # code 32 ("-0") is never generated; see module doc
    if type_id == 103:
        return np.arange(256, dtype=np.int64).astype(np.uint8).view(np.int8).astype(np.float64)
    if type_id == 107:
        return np.asarray(fp2_codebook, dtype=np.float64)
    raise ValueError(f"not a ROCmFP type id: {type_id}")


def _allowed_codes(type_id: int) -> np.ndarray:
    n = 1 << LAYOUTS[type_id].bits
    codes = np.arange(n)
    if type_id == 102:
        codes = codes[codes != 32]
    return codes


# --- bit packing ----------------------------------------------------------------------------
def _pack_codes(codes: np.ndarray, layout: RocmLayout) -> np.ndarray:
    """codes: [nb, 32] ints -> [nb, code_bytes] uint8."""
    nb = codes.shape[0]
    c = codes.astype(np.uint64)
    if layout.bits == 8:
        return c.astype(np.uint8)
    if layout.bits == 4:  # element j<16 in the low nibble of byte j, element j+16 in its high nibble
        return (c[:, :16] | (c[:, 16:] << 4)).astype(np.uint8)
    if layout.bits == 2:  # element i in bits 2*(i&3) of byte i>>2
        c4 = c.reshape(nb, 8, 4)
        return (c4[:, :, 0] | c4[:, :, 1] << 2 | c4[:, :, 2] << 4 | c4[:, :, 3] << 6).astype(np.uint8)
    # 3- and 6-bit: LSB-first bit stream; 24 bits hold 8 (3-bit) or 4 (6-bit) codes
    per = 24 // layout.bits
    groups = c.reshape(nb, QK // per, per)
    shifts = (np.arange(per, dtype=np.uint64) * layout.bits)
    word = (groups << shifts).sum(axis=2)  # [nb, groups] 24-bit words
    out = np.stack([(word >> np.uint64(8 * k)) & np.uint64(0xFF) for k in range(3)], axis=2)
    return out.reshape(nb, layout.code_bytes).astype(np.uint8)


def _unpack_codes(raw: np.ndarray, layout: RocmLayout) -> np.ndarray:
    nb = raw.shape[0]
    b = raw[:, : layout.code_bytes].astype(np.uint64)
    if layout.bits == 8:
        return b.astype(np.int64)
    if layout.bits == 4:
        return np.concatenate([b & 15, b >> 4], axis=1).astype(np.int64)
    if layout.bits == 2:
        return np.stack([(b >> np.uint64(2 * k)) & np.uint64(3) for k in range(4)], axis=2).reshape(nb, QK).astype(np.int64)
    per = 24 // layout.bits
    trip = b.reshape(nb, -1, 3)
    word = trip[:, :, 0] | trip[:, :, 1] << np.uint64(8) | trip[:, :, 2] << np.uint64(16)
    mask = np.uint64((1 << layout.bits) - 1)
    codes = np.stack([(word >> np.uint64(layout.bits * k)) & mask for k in range(per)], axis=2)
    return codes.reshape(nb, QK).astype(np.int64)


# --- public API -----------------------------------------------------------------------------
def dequantize(raw: bytes | np.ndarray, type_id: int, fp2_codebook=FP2_CODEBOOK_SPEC) -> np.ndarray:
    """Decode ROCmFP blocks to float32, flat."""
    layout = LAYOUTS[type_id]
    buf = np.frombuffer(raw, dtype=np.uint8) if isinstance(raw, (bytes, bytearray, memoryview)) else np.asarray(raw, np.uint8)
    if buf.size % layout.block_bytes:
        raise ValueError(f"{layout.name}: {buf.size} bytes is not a whole number of {layout.block_bytes}-byte blocks")
    blocks = buf.reshape(-1, layout.block_bytes)
    vals = code_values(type_id, fp2_codebook)[_unpack_codes(blocks, layout)]
    scales = scale_of_byte(blocks[:, layout.code_bytes:])
    if layout.n_scales == 2:
        per_elem = np.repeat(scales, QK // 2, axis=1)
    else:
        per_elem = np.repeat(scales, QK, axis=1)
    return (vals * per_elem).astype(np.float32).reshape(-1)


def scale_byte_for(step: float) -> int:
    """The scale byte whose scale is nearest (in log terms) to `step`."""
    ok = np.arange(1, MAX_SCALE_BYTE + 1)
    return int(ok[np.argmin(np.abs(np.log(_SCALE_TABLE[ok]) - np.log(step)))])


# Blocks drawn, packed and summed per chunk: a full-width expert tensor is 67M blocks, whose codes
# as one int64 array (17 GB) with its temporaries ran a writer process out of memory (step 32).
_CHUNK_BLOCKS = 1 << 20


def _random_codes(rng: np.random.Generator, n_blocks: int, type_id: int, std: float) -> np.ndarray:
    layout = LAYOUTS[type_id]
    if layout.bits >= 6:
        max_mag = 127 if layout.bits == 8 else 31
        # pick the scale first, then the Gaussian code spread that gives `std` with it; this
        # matters for small std, where the smallest scales (k * 2^-10) are coarse steps
        s = float(scale_of_byte(scale_byte_for(std / (0.3 * max_mag))))
        sigma_codes = min(std / s, 0.45 * max_mag)
        v = np.clip(np.rint(rng.standard_normal((n_blocks, QK)) * sigma_codes), -max_mag, max_mag).astype(np.int64)
        return (v & 0xFF) if layout.bits == 8 else (np.abs(v) | np.where(v < 0, 32, 0))
    if type_id == 107:
        # The spec codebook {-1, 0, 1, 2} is lopsided: uniform codes would average +0.5.
        # These frequencies give zero mean, as a real quantiser of zero-mean weights does.
        return rng.choice(4, size=(n_blocks, QK), p=(0.4, 0.25, 0.3, 0.05))
    allowed = _allowed_codes(type_id)
    return allowed[rng.integers(0, allowed.size, size=(n_blocks, QK))]


def random_blocks(rng: np.random.Generator, n_blocks: int, type_id: int, std: float) -> bytes:
    """Random valid blocks whose decoded weights have RMS close to `std` (zero mean).

    2-4 bit codes are drawn uniformly (2-bit: with zero-mean frequencies); 6/8-bit codes are rounded Gaussians (as a real
    quantiser would produce), which keeps the scale byte in the fine-grained range. Codes are drawn and packed
    _CHUNK_BLOCKS blocks at a time, then every block's scale byte."""
    layout = LAYOUTS[type_id]
    values = code_values(type_id)
    packed, square_sum = [], 0.0
    for first in range(0, n_blocks, _CHUNK_BLOCKS):
        codes = _random_codes(rng, min(_CHUNK_BLOCKS, n_blocks - first), type_id, std)
        square_sum += float(np.sum(values[codes] ** 2))
        packed.append(_pack_codes(codes, layout))
    code_rms_here = float(np.sqrt(square_sum / (n_blocks * QK))) if n_blocks else 0.0
    code_rms_here = code_rms_here or 1.0
    e0 = scale_byte_for(std / code_rms_here)
    e = np.full((n_blocks, layout.n_scales), e0, dtype=np.int64)
    if e0 >= 9:  # +-1 step of jitter (about 12%) where steps are fine, so blocks are not all alike
        e = np.clip(e + rng.integers(-1, 2, size=e.shape), 1, MAX_SCALE_BYTE)
    codes_bytes = np.concatenate(packed) if packed else np.zeros((0, layout.code_bytes), np.uint8)
    out = np.concatenate([codes_bytes, e.astype(np.uint8)], axis=1)
    return out.tobytes()
