"""needle.png: found (exact literal) per length and depth, one panel per arm; cells where the arms'
answers differ are marked with an x."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def heatmap(path: Path, cells: list[dict[str, Any]], lengths: list[int], depths: list[float], arms: list[str]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(arms), figsize=(4 + 0.5 * len(depths) * len(arms), 1.5 + 0.6 * len(lengths)),
                             squeeze=False, constrained_layout=True)
    by = {(c["length"], c["depth"]): c for c in cells}
    for ax, arm in zip(axes[0], arms):
        grid = np.full((len(lengths), len(depths)), np.nan)
        for i, n in enumerate(lengths):
            for j, d in enumerate(depths):
                c = by.get((n, d))
                if c and arm in c["arms"]:
                    grid[i, j] = 1.0 if c["arms"][arm]["found"] else 0.0
                    if c.get("arms_agree") is False:
                        ax.text(j, i, "x", ha="center", va="center", color="black", fontsize=12)
        ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(depths)))
        ax.set_xticklabels([f"{d:g}" for d in depths], fontsize=8)
        ax.set_yticks(range(len(lengths)))
        ax.set_yticklabels([str(n) for n in lengths], fontsize=8)
        ax.set_xlabel("needle depth (% of the haystack)")
        ax.set_ylabel("context tokens")
        ax.set_title(f"{arm}: found (green) / missed (red); x: arms differ", fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
