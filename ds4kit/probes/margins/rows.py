"""One verify row against its reference row, and what all rows add up to.

The rule (stated in every report): a row *flips* where the verify row's argmax differs from the
reference's; a flip *counts* where the reference's top-2 margin (top-1 minus top-2 logit) is
greater than the tolerance. The probe passes iff no flip counts and every logit is finite.
Ties of the argmax go to the lower token id (numpy's argmax, the engine's sampler rule).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

RULE = ("pass iff, at every verify row whose reference (one-token decode at the same position) has a "
        "top-2 logit margin greater than the tolerance, the verify row's argmax equals the reference's, "
        "and every logit is finite")


@dataclass(frozen=True)
class RowResult:
    prompt_id: str
    position: int        # where the verify started (its first token's position)
    width: int           # tokens in that verify forward
    row: int             # row within it: the logits after feeding position + row
    token: int           # the token fed at that row
    max_abs_dlogit: float
    bitwise_equal: bool
    ref_argmax: int
    verify_argmax: int
    ref_top2_margin: float
    finite: bool

    @property
    def flip(self) -> bool:
        return self.ref_argmax != self.verify_argmax

    def counts(self, tolerance: float) -> bool:
        return self.flip and self.ref_top2_margin > tolerance

    def csv_row(self, tolerance: float) -> dict:
        d = asdict(self)
        d["argmax_agree"] = not self.flip
        d["flip_counts"] = self.counts(tolerance)
        return d


CSV_FIELDS = ["prompt_id", "position", "width", "row", "token", "max_abs_dlogit", "bitwise_equal", "ref_argmax",
              "verify_argmax", "argmax_agree", "ref_top2_margin", "flip_counts", "finite"]


def top2_margin(logits: np.ndarray) -> float:
    top = np.partition(logits.astype(np.float64), -2)[-2:]
    return float(top[1] - top[0])


def compare_row(verify_row: np.ndarray, ref_row: np.ndarray, *, prompt_id: str, position: int, width: int,
                row: int, token: int) -> RowResult:
    finite = bool(np.isfinite(verify_row).all() and np.isfinite(ref_row).all())
    diff = np.abs(verify_row.astype(np.float64) - ref_row.astype(np.float64))
    return RowResult(prompt_id, position, width, row, int(token),
                     max_abs_dlogit=float(diff.max()) if finite else float("inf"),
                     bitwise_equal=verify_row.tobytes() == ref_row.tobytes(),
                     ref_argmax=int(np.argmax(ref_row)), verify_argmax=int(np.argmax(verify_row)),
                     ref_top2_margin=top2_margin(ref_row), finite=finite)


def summarize(rows: list[RowResult], widths: list[int], tolerance: float) -> dict:
    """The report's numbers: totals, per width, and every flip."""
    def stats(sel: list[RowResult]) -> dict:
        d = np.array([r.max_abs_dlogit for r in sel]) if sel else np.zeros(0)
        flips = [r for r in sel if r.flip]
        return {
            "rows": len(sel),
            "bitwise_equal_rows": sum(r.bitwise_equal for r in sel),
            "max_abs_dlogit": float(d.max()) if sel else 0.0,
            "median_abs_dlogit": float(np.median(d)) if sel else 0.0,
            "flips": len(flips),
            "counted_flips": sum(r.counts(tolerance) for r in sel),
            "min_flip_margin": min((r.ref_top2_margin for r in flips), default=None),
            "nonfinite_rows": sum(not r.finite for r in sel),
        }

    total = stats(rows)
    # One token of a prompt can flip in several verifies (every start and width that covers it).
    flipped: dict[tuple[str, int], bool] = {}
    for r in rows:
        if r.flip:
            key = (r.prompt_id, r.position + r.row)
            flipped[key] = flipped.get(key, False) or r.counts(tolerance)
    return {
        **total,
        "flipped_positions": len(flipped),
        "counted_flipped_positions": sum(flipped.values()),
        "all_rows_bitwise_equal": bool(rows) and total["bitwise_equal_rows"] == len(rows),
        "per_width": [{"width": w, **stats([r for r in rows if r.width == w])} for w in widths],
        "flip_list": [{**r.csv_row(tolerance)} for r in rows if r.flip],
    }


def verdict(summary: dict, complete: bool) -> str:
    if summary["counted_flips"] or summary["nonfinite_rows"]:
        return "fail"
    return "pass" if complete else "incomplete"
