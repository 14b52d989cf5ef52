"""The report's results, summary.md and the categories plot, from the verdict lines."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ds4kit.evals.humaneval.categories import CATEGORIES


def results_from(verdicts: list[dict[str, Any]], *, base_only: bool) -> dict[str, Any]:
    n = len(verdicts)
    base = sum(v["base"] == "pass" for v in verdicts)
    plus = sum(v["plus"] == "pass" for v in verdicts) if not base_only else None
    counts = Counter(v["category"] for v in verdicts)
    return {
        "pass_at_1": {"base": base / n if n else None, "plus": (plus / n if n else None) if not base_only else None,
                      "n_tasks": n, "base_passed": base, "plus_passed": plus},
        "categories": {c: counts.get(c, 0) for c in CATEGORIES},
        "truncated": sum(bool(v.get("truncated")) for v in verdicts),
        "smart_quotes": sum(bool(v.get("smart_quotes")) for v in verdicts),
        "tasks": [{k: v.get(k) for k in ("task_id", "status", "category", "base", "plus", "detail", "truncated")}
                  for v in verdicts],
    }


def plot_categories(path: Path, results: dict[str, Any], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cats = results["categories"]
    fig, ax = plt.subplots(figsize=(8, 4))
    colors = ["#2a9d8f" if c == "pass" else "#e76f51" for c in cats]
    bars = ax.bar(list(cats), list(cats.values()), color=colors)
    ax.bar_label(bars)
    ax.set_ylabel("tasks")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title(title)
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def summary_md(results: dict[str, Any]) -> str:
    p = results["pass_at_1"]
    ds = results["dataset"]
    pct = lambda x: "n/a (base-only dataset)" if x is None else f"{100 * x:.1f}%"
    lines = [f"dataset: {ds['label']}, {ds['tasks']} tasks, sha256 `{ds['sha256']}` ({ds['source']}: {ds['path']})",
             "", f"- pass@1 base: **{pct(p['base'])}** ({p['base_passed']}/{p['n_tasks']})",
             f"- pass@1 plus: **{pct(p['plus'])}**" + (f" ({p['plus_passed']}/{p['n_tasks']})"
                                                    if p['plus'] is not None else ""),
             f"- truncated by the token budget: {results['truncated']}",
             f"- containment: {results['containment']['method']} ({results['containment']['why']})",
             f"- grading: {results['grading']['seconds']:.1f} s for {results['grading']['graded_now']} samples, "
             f"{results['grading']['jobs']} at a time", "", "| category | tasks |", "|---|---|"]
    lines += [f"| {c} | {n} |" for c, n in results["categories"].items()]
    failed = [t for t in results["tasks"] if t["status"] != "pass"]
    if failed:
        lines += ["", "| task | category | detail |", "|---|---|---|"]
        lines += [f"| {t['task_id']} | {t['category']} | {str(t['detail'] or '')[:120].replace('|', '/')} |"
                  for t in failed[:200]]
    return "\n".join(lines) + "\n"
