"""The pre-tokenizer against HF's, for every Unicode code point.

Each code point c is placed in two contexts, "a" c "a" and c "\n", that give a
different split for each class the regexes distinguish (letter/mark, number,
punctuation/symbol, whitespace, other), so a wrong table entry shows up as a
different piece list.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tokenizer_fixtures import engine_tokenizer, hf_tokenizer

from ds4kit import _engine

REPO = Path(__file__).resolve().parents[2]
CHUNK = 1 << 15
# Planes 4-13 are unassigned and 15-16 are private use: one class throughout, so
# a sample of them is enough; planes 0-3 and 14 are checked code point by code point.
SAMPLED_PLANES = set(range(4, 14)) | {15, 16}
SAMPLE_STEP = 61


def _probe_text(first: int, last: int) -> str:
    parts = []
    step = SAMPLE_STEP if (first >> 16) in SAMPLED_PLANES else 1
    for cp in range(first, last, step):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # not representable in a valid string
        c = chr(cp)
        parts.append("一a" + c + "a一" + c + "\n")
    return "".join(parts)


def _piece_lengths_ours(text: str) -> list[int]:
    return [len(p.decode("utf-8")) for p in engine_tokenizer().pre_tokenize(text)]


def _piece_lengths_hf(text: str) -> list[int]:
    return [end - start for _, (start, end) in hf_tokenizer().pre_tokenizer.pre_tokenize_str(text)]


@pytest.mark.parametrize("plane", range(17), ids=lambda v: f"plane{v}")
def test_every_code_point_splits_like_hf(plane):
    for start in range(plane << 16, (plane + 1) << 16, CHUNK):
        text = _probe_text(start, start + CHUNK)
        ours, ref = _piece_lengths_ours(text), _piece_lengths_hf(text)
        if ours != ref:
            i = next(k for k, (a, b) in enumerate(zip(ours + [-1], ref + [-1])) if a != b)
            at = sum(ref[:i])
            pytest.fail(f"pre-tokenizer differs from HF near {text[max(0, at - 8):at + 8]!r} "
                        f"(piece {i}: ours {ours[i:i + 3]}, HF {ref[i:i + 3]} chars)")


def test_table_version_is_reported():
    assert _engine.tokenizer_unicode_version == "16.0.0"


def test_generated_table_is_current():
    try:
        import unicodedata2
    except ImportError:
        pytest.skip("unicodedata2 is not installed (pip install unicodedata2==16.0.0); "
                    "the code-point test above still checks the table against HF")
    if unicodedata2.unidata_version != _engine.tokenizer_unicode_version:
        pytest.skip(f"unicodedata2 {unicodedata2.unidata_version} installed, table is "
                    f"{_engine.tokenizer_unicode_version}")
    out = subprocess.run([sys.executable, str(REPO / "engine/tools/gen_unicode_tables.py")], check=True,
                         capture_output=True, text=True).stdout
    assert out == (REPO / "engine/src/tokenizer/unicode_classes.inc").read_text(encoding="utf-8")
