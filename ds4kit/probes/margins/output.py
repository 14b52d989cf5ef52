"""What `probe margins` writes besides report.json: the rows CSV, the histogram, summary.md."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import IO

import numpy as np

from ds4kit.probes.margins.rows import CSV_FIELDS, RowResult


class RowsCsv:
    """rows.csv, one line per verify row, flushed after every position (an interrupted run keeps
    what it compared)."""

    def __init__(self, path: Path, tolerance: float):
        self._f: IO[str] = open(path, "w", newline="", encoding="utf-8")
        self._w = csv.DictWriter(self._f, fieldnames=CSV_FIELDS)
        self._w.writeheader()
        self._tol = tolerance

    def write(self, rows: list[RowResult]) -> None:
        for r in rows:
            d = r.csv_row(self._tol)
            d["max_abs_dlogit"] = repr(d["max_abs_dlogit"])     # full precision, round-trips
            d["ref_top2_margin"] = repr(d["ref_top2_margin"])
            self._w.writerow(d)
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def plot_histogram(path: Path, rows: list[RowResult], widths: list[int], tolerance: float, title: str) -> None:
    """|dlogit| per width on a log axis; bitwise-equal rows (|dlogit| = 0, off any log axis)
    counted in each panel's corner; flips marked as red ticks at their |dlogit| (filled: counted
    by the rule, hollow: at a margin within the tolerance)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nonzero = [r.max_abs_dlogit for r in rows if r.max_abs_dlogit > 0 and np.isfinite(r.max_abs_dlogit)]
    lo, hi = (min(nonzero), max(nonzero)) if nonzero else (1e-8, 1.0)
    bins = np.logspace(np.log10(lo) - 0.1, np.log10(hi) + 0.1, 40)
    cols = min(4, len(widths))
    nrows = -(-len(widths) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 2.4 * nrows + 0.6), squeeze=False, sharex=True)
    for ax in axes.flat[len(widths):]:
        ax.set_visible(False)
    for ax, w in zip(axes.flat, widths):
        sel = [r for r in rows if r.width == w]
        d = [r.max_abs_dlogit for r in sel if r.max_abs_dlogit > 0 and np.isfinite(r.max_abs_dlogit)]
        zeros = sum(r.bitwise_equal for r in sel)
        if d:
            ax.hist(d, bins=bins, color="#4477aa")
        else:
            ax.text(0.5, 0.45, "|dlogit| = 0 in every row", transform=ax.transAxes, ha="center", fontsize=8)
        for r in sel:
            if r.flip:
                x = r.max_abs_dlogit if r.max_abs_dlogit > 0 else lo
                ax.plot([x], [0], marker="v", markersize=9, color="#cc3311",
                        markerfacecolor="#cc3311" if r.counts(tolerance) else "none", clip_on=False)
        ax.set_xscale("log")
        ax.set_title(f"width {w}", fontsize=9)
        ax.text(0.97, 0.93, f"{zeros}/{len(sel)} rows bitwise equal\n{sum(r.flip for r in sel)} flips",
                transform=ax.transAxes, ha="right", va="top", fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("max |verify - decode| logit", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("rows", fontsize=8)
    fig.suptitle(title + f"\nflips: red triangles (filled: margin > tolerance {tolerance:g}, counts)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def summary_md(results: dict) -> str:
    s = results
    lines = [f"**Verdict: {s['verdict']}** ({s['rule']}; tolerance {s['tolerance']:g})", "",
             f"- target: {s['target_kind']}; suite {s['suite']['name']}, {len(s['suite']['items'])} prompts, "
             f"{s['positions_compared']} positions, widths {s['widths']}",
             f"- rows compared: {s['rows']}, bitwise equal to decode: {s['bitwise_equal_rows']}"
             + (" (**every row bitwise equal**)" if s["all_rows_bitwise_equal"] else ""),
             f"- largest |dlogit|: {s['max_abs_dlogit']:.6g}; argmax flips: {s['flips']}, counted "
             f"(margin > {s['tolerance']:g}): {s['counted_flips']}; distinct prompt positions flipped: "
             f"{s['flipped_positions']} ({s['counted_flipped_positions']} counted)", "",
             "| width | rows | bitwise equal | max abs dlogit | median | flips | counted | smallest flip margin |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for w in s["per_width"]:
        m = "" if w["min_flip_margin"] is None else f"{w['min_flip_margin']:.4g}"
        lines.append(f"| {w['width']} | {w['rows']} | {w['bitwise_equal_rows']} | {w['max_abs_dlogit']:.4g} | "
                     f"{w['median_abs_dlogit']:.4g} | {w['flips']} | {w['counted_flips']} | {m} |")
    if s["flip_list"]:
        lines += ["", "Flips:", "", "| prompt | position | width | row | margin | decode argmax | verify argmax | "
                  "max abs dlogit | counts |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for f in s["flip_list"]:
            lines.append(f"| {f['prompt_id']} | {f['position']} | {f['width']} | {f['row']} | "
                         f"{f['ref_top2_margin']:.4g} | {f['ref_argmax']} | {f['verify_argmax']} | "
                         f"{f['max_abs_dlogit']:.4g} | {'yes' if f['flip_counts'] else 'no'} |")
    return "\n".join(lines) + "\n"
