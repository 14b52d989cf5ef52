"""Tensor types a synthetic model may use, and how to turn N(0, std) weights into their bytes.

Types gguf-py can quantise (F32 F16 BF16 Q8_0 Q4_0 MXFP4) get real Gaussian weights
quantised by gguf.quants. For the others (Q4_K Q2_K IQ2_XXS and the ROCmFP types)
we write random *valid* blocks with scales chosen for the wanted magnitude; the
model's weights are then by definition what those blocks dequantise to.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gguf import quants
from gguf.constants import GGMLQuantizationType as GQT

from ds4kit.synth import rocmfp


@dataclass(frozen=True)
class QType:
    name: str
    type_id: int
    block_size: int
    block_bytes: int

    def row_bytes(self, n: int, what: str = "tensor") -> int:
        if n % self.block_size:
            raise ValueError(
                f"{what}: row length {n} is not a multiple of {self.name}'s block size {self.block_size}; "
                f"pick another type for this group or change the dimension")
        return n // self.block_size * self.block_bytes

    def nbytes(self, shape: tuple[int, ...], what: str = "tensor") -> int:
        rows = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1
        return self.row_bytes(shape[0], what) * rows


_TABLE = [
    QType("F32", 0, 1, 4), QType("F16", 1, 1, 2), QType("BF16", 30, 1, 2),
    QType("Q8_0", 8, 32, 34), QType("Q4_0", 2, 32, 18), QType("Q4_K", 12, 256, 144),
    QType("Q2_K", 10, 256, 84), QType("IQ2_XXS", 16, 256, 66), QType("MXFP4", 39, 32, 17),
    QType("I32", 26, 1, 4),
] + [QType(l.name, l.type_id, rocmfp.QK, l.block_bytes) for l in rocmfp.LAYOUTS.values()]

BY_NAME = {t.name: t for t in _TABLE}
BY_ID = {t.type_id: t for t in _TABLE}
# Short aliases accepted on the command line (the issue says "ROCmFP 100 101 ...").
ALIASES = {str(t.type_id): t.name for t in _TABLE if t.type_id >= 100}

WEIGHT_TYPES = tuple(t.name for t in _TABLE if t.name != "I32")
ROCM_TYPES = tuple(l.name for l in rocmfp.LAYOUTS.values())
GGUF_QUANTISABLE = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "MXFP4")
RANDOM_BLOCK_TYPES = ("Q4_K", "Q2_K", "IQ2_XXS") + ROCM_TYPES


def lookup(name: str) -> QType:
    key = ALIASES.get(str(name), str(name).upper())
    if key not in BY_NAME or key == "I32":
        raise ValueError(f"unknown weight type {name!r}; choose one of: {', '.join(WEIGHT_TYPES)} "
                         f"(ROCmFP also by id: {', '.join(ALIASES)})")
    return BY_NAME[key]


def encode_values(values: np.ndarray, qt: QType) -> bytes:
    """Exact values (float) -> bytes of a gguf-quantisable type."""
    v = np.ascontiguousarray(values, dtype=np.float32)
    if qt.name == "F32":
        return v.tobytes()
    if qt.name == "F16":
        return v.astype("<f2").tobytes()
    return quants.quantize(v, GQT(qt.type_id)).tobytes()


def encode_gaussian(rng: np.random.Generator, shape: tuple[int, ...], std: float, qt: QType,
                    what: str = "tensor") -> bytes:
    """Bytes of a tensor of ggml shape `shape` whose weights are ~N(0, std^2) (or, for
    random-block types, have RMS ~std and zero mean)."""
    n_bytes = qt.nbytes(shape, what)
    n = int(np.prod(shape, dtype=np.int64))
    if qt.name in GGUF_QUANTISABLE:
        data = b"".join(_gaussian_slabs(rng, shape, std, qt))
    elif qt.type_id in rocmfp.LAYOUTS:
        data = rocmfp.random_blocks(rng, n // qt.block_size, qt.type_id, std)
    else:
        data = _random_k_blocks(rng, n // qt.block_size, qt, std)
    assert len(data) == n_bytes, (what, len(data), n_bytes)
    return data


# Values drawn and quantised per slab of about this many: a full-width experts tensor in one piece
# (2^31 float32 values and gguf-py's temporaries, tens of GB) had the OS kill `synth -j` workers.
GAUSSIAN_SLAB_VALUES = 1 << 24


def _gaussian_slabs(rng: np.random.Generator, shape: tuple[int, ...], std: float, qt: QType):
    """The tensor's bytes slab by slab of whole rows (innermost ggml dim). Bit for bit the bytes of
    one draw of the whole tensor: the generator's stream does not depend on how it is split into
    calls, and every type here quantises each row's blocks on their own."""
    inner = int(shape[0])
    rows = int(np.prod(shape, dtype=np.int64)) // inner
    step = max(1, GAUSSIAN_SLAB_VALUES // inner)
    for r0 in range(0, rows, step):
        values = rng.standard_normal(size=(min(step, rows - r0), inner), dtype=np.float32)
        values *= np.float32(std)
        yield encode_values(values, qt)


# --- random valid blocks for the K / IQ types gguf-py cannot quantise --------------------------
def _f16(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).astype("<f2").view(np.uint8).reshape(-1, 2)


def _random_k_blocks(rng: np.random.Generator, nb: int, qt: QType, std: float) -> bytes:
    jitter = rng.uniform(0.8, 1.2, size=nb)  # per-block scale variety
    if qt.name == "Q4_K":
        # w = d*sc*q - dmin*m with q in 0..15; m = sc and dmin = 7.5*d centre it: w = d*sc*(q - 7.5)
        sc = rng.integers(32, 64, size=(nb, 8))
        d = std / (np.sqrt(np.mean(sc.astype(np.float64) ** 2)) * np.sqrt((16 ** 2 - 1) / 12.0)) * jitter
        scales = _pack_q4k_scales(sc, sc)
        qs = rng.integers(0, 256, size=(nb, 128), dtype=np.uint8)
        block = np.concatenate([_f16(d), _f16(7.5 * d), scales, qs], axis=1)
    elif qt.name == "Q2_K":
        # w = d*(s&15)*q - dmin*(s>>4) with q in 0..3; equal nibbles and dmin = 1.5*d centre it
        sc = rng.integers(8, 16, size=(nb, 16))
        d = std / (np.sqrt(np.mean(sc.astype(np.float64) ** 2)) * np.sqrt((4 ** 2 - 1) / 12.0)) * jitter
        scales = (sc | (sc << 4)).astype(np.uint8)
        qs = rng.integers(0, 256, size=(nb, 64), dtype=np.uint8)
        block = np.concatenate([scales, qs, _f16(d), _f16(1.5 * d)], axis=1)
    elif qt.name == "IQ2_XXS":
        # any grid index (byte) and any 7-bit sign index is valid; signs make the mean zero.
        # Magnitude: measure the unit-scale RMS with gguf-py's own decoder, then scale d.
        qs = rng.integers(0, 256, size=(nb, 64), dtype=np.uint8)
        unit = np.concatenate([_f16(np.ones(nb)), qs], axis=1)
        sample = min(nb, 64)
        rms_unit = float(np.sqrt(np.mean(quants.dequantize(unit[:sample], GQT.IQ2_XXS).astype(np.float64) ** 2)))
        block = np.concatenate([_f16(std / rms_unit * jitter), qs], axis=1)
    else:
        raise ValueError(f"no random-block generator for {qt.name}")
    return np.ascontiguousarray(block, dtype=np.uint8).tobytes()


def _pack_q4k_scales(sc: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Pack 8 six-bit scales and mins into Q4_K's 12 bytes (inverse of ggml's get_scale_min_k4)."""
    sc = sc.astype(np.uint16)
    m = m.astype(np.uint16)
    out = np.zeros((sc.shape[0], 12), dtype=np.uint16)
    for j in range(4):
        out[:, j] = (sc[:, j] & 63) | ((sc[:, j + 4] >> 4) << 6)
        out[:, j + 4] = (m[:, j] & 63) | ((m[:, j + 4] >> 4) << 6)
        out[:, j + 8] = (sc[:, j + 4] & 15) | ((m[:, j + 4] & 15) << 4)
    return out.astype(np.uint8)


def dequantize(raw: bytes, qt: QType, shape: tuple[int, ...]) -> np.ndarray:
    """Weights as float32 in numpy order (reversed ggml shape). ROCmFP via our decoder, others via gguf-py."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    if qt.type_id in rocmfp.LAYOUTS:
        flat = rocmfp.dequantize(buf, qt.type_id)
    elif qt.name == "F32":
        flat = buf.view("<f4")
    elif qt.name == "F16":
        flat = buf.view("<f2").astype(np.float32)
    elif qt.name == "I32":
        return buf.view("<i4").reshape(tuple(reversed(shape)))
    else:
        flat = quants.dequantize(buf, GQT(qt.type_id)).reshape(-1)
    return np.asarray(flat, dtype=np.float32).reshape(tuple(reversed(shape)))
