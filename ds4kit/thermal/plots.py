"""The PNG timeline: temperatures (with warn and abort lines), power, clocks; throttle episodes shaded."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.thermal.sensor_base import metric_kind

_MAX_LINES = 10  # beyond this a panel is unreadable; the CSV has everything


def _series(samples: list[dict[str, Any]], kind: str) -> dict[str, tuple[list[float], list[float]]]:
    out: dict[str, tuple[list[float], list[float]]] = {}
    for s in samples:
        for k, v in s.get("values", {}).items():
            if metric_kind(k) == kind:
                ts, vs = out.setdefault(k, ([], []))
                ts.append(s["t"])
                vs.append(v)
    # GPU metrics first, then by peak value: the lines most likely to matter.
    ranked = sorted(out.items(), key=lambda kv: (kv[0].startswith(("cpu", "k10temp", "psutil")), -max(kv[1][1])))
    return dict(ranked[:_MAX_LINES])


def timeline_png(path: str | Path, samples: list[dict[str, Any]], episodes: list[dict[str, Any]], *,
                 warn_at: float | None, abort_at: float | None, abort_t: float | None = None, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("temperature", "temperature (C)"), ("power", "power (W)"), ("clock", "clock (MHz)")]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 8.5), sharex=True)
    for ax, (kind, label) in zip(axes, panels):
        series = _series(samples, kind)
        for key, (ts, vs) in series.items():
            ax.plot(ts, vs, linewidth=1.2, label=key)
        if not series:
            ax.text(0.5, 0.5, f"no {kind} readings", ha="center", va="center", transform=ax.transAxes, color="grey")
        if kind == "temperature":
            if warn_at is not None:
                ax.axhline(warn_at, color="orange", linestyle="--", linewidth=1, label=f"warn {warn_at:g} C")
            if abort_at is not None:
                ax.axhline(abort_at, color="red", linestyle="--", linewidth=1, label=f"abort {abort_at:g} C")
        for i, e in enumerate(episodes):
            ax.axvspan(e["start_t"], max(e["end_t"], e["start_t"] + 0.01), color="red", alpha=0.15,
                       label="throttle episode" if i == 0 and kind == "temperature" else None)
        if abort_t is not None:
            ax.axvline(abort_t, color="red", linewidth=1.5)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left", ncol=2)
    axes[-1].set_xlabel("time since start (s)")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
