"""prefix-cache.png: per turn, prefill seconds with the cache (restore + suffix) against cold, and
the reuse the cache achieved against the ideal (and the structurally reachable) reuse."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_turns(path: Path, rows: list[dict[str, Any]], title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = [r["id"] for r in rows]
    x = np.arange(len(rows))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(6.0, 0.9 * len(rows) + 2), 7), constrained_layout=True)
    w = 0.38
    cold = [r["cold_prefill_s"] or 0.0 for r in rows]
    warm = [(r.get("restore_s") or 0.0) + (r.get("suffix_prefill_s") or 0.0) for r in rows]
    ax1.bar(x - w / 2, cold, w, label="cache off (cold prefill)", color="#888888")
    ax1.bar(x + w / 2, warm, w, label="cache on (restore + suffix prefill)", color="#1f77b4")
    ax1.set_yscale("log")
    top = max(cold + warm + [1e-3])
    ax1.set_ylim(top=top * 30)        # room for the legend above the bars
    ax1.set_ylabel("seconds")
    ax1.set_title(f"{title}: prefill time per turn")
    ax1.legend(fontsize=8, loc="upper left", ncol=2)
    ax2.bar(x - w / 2, [r.get("expected_reuse") or 0 for r in rows], w, label="expected (ideal)", color="#bbbbbb")
    ax2.bar(x + w / 2, [r.get("actual_reuse") or 0 for r in rows], w, label="actual (restored)", color="#2ca02c")
    ax2.scatter(x + w / 2, [r.get("reachable_reuse") or 0 for r in rows], marker="_", s=300, color="black",
                label="reachable (snapshot rule)", zorder=3)
    ax2.set_ylim(top=max([r.get("expected_reuse") or 0 for r in rows] + [1]) * 1.25)
    ax2.set_ylabel("tokens reused")
    ax2.set_title("reuse per turn")
    ax2.legend(fontsize=8, loc="upper left", ncol=3)
    for ax in (ax1, ax2):
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
