"""The bf16 matrix peaks of the GPUs ds4kit is qualified on, stated from their datasheets.

`bench engine` on a GPU backend divides prefill FLOP/s by this (the issue's "fraction of the
bf16 matrix peak"). A tensor-core peak cannot be measured without a vendor BLAS, which ds4kit
does not link, so it is stated with its source; a GPU not listed here gets no prefill fraction,
and the report says so instead of dividing by something else.
"""
from __future__ import annotations

from typing import Any

# (how the device is recognised, dense bf16 FLOP/s, where the figure comes from)
_PEAKS: list[tuple[str, str, float, str]] = [
    ("name", "NVIDIA H200", 989.4e12,
     "NVIDIA H200 SXM datasheet: BF16 Tensor Core 1979 TFLOPS with 2:4 sparsity, 989.4 dense"),
    ("name", "NVIDIA H100 80GB HBM3", 989.4e12,
     "NVIDIA H100 SXM5 datasheet: BF16 Tensor Core 1979 TFLOPS with 2:4 sparsity, 989.4 dense"),
    ("arch", "gfx1151", 40 * 512 * 2.9e9,
     "Strix Halo (Radeon 8060S): 40 CUs x 512 BF16 FLOP a clock (RDNA 3.5 WMMA) x 2.9 GHz peak clock"),
]


def bf16_peak(device: str, arch: str) -> dict[str, Any]:
    """{"flop_per_s": peak or None, "source": where it comes from or why there is none}."""
    for by, key, flops, source in _PEAKS:
        if (by == "name" and device == key) or (by == "arch" and arch.split(":")[0] == key):
            return {"flop_per_s": flops, "source": source}
    return {"flop_per_s": None, "source": f"no datasheet peak listed for {device!r} ({arch}) in ds4kit.bench.gpu_peaks"}
