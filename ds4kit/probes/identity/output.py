"""What `probe identity` reports per arm, its summary and its plot."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ds4kit.probes.identity.arms import TARGET_ONLY, Arm
from ds4kit.probes.identity.compare import tokens_sha256


def _spec_totals(runs: list) -> dict[str, Any] | None:
    specs = [r.speculation for _, r, _ in runs if r.speculation]
    if not specs:
        return None
    # Counts stay integers, seconds floats (sum keeps each as it comes).
    tot: dict[str, Any] = {k: sum(s.get(k, 0) for s in specs)
                           for k in ("steps", "plain_steps", "verified", "accepted", "emitted", "draft_s", "verify_s",
                                     "rewind_s")}
    tried = [0] * max((len(s.get("tried_at", [])) for s in specs), default=0)
    acc = [0] * len(tried)
    for s in specs:
        for j, (t, a) in enumerate(zip(s.get("tried_at", []), s.get("accepted_at", []))):
            tried[j] += t
            acc[j] += a
    tot["tried_at"], tot["accepted_at"] = tried, acc
    tot["acceptance_by_position"] = [a / t if t else None for a, t in zip(acc, tried)]
    tot["acceptance_rate"] = tot["accepted"] / tot["verified"] if tot["verified"] else None
    tot["tokens_per_forward"] = tot["emitted"] / tot["steps"] if tot["steps"] else None
    tot["mean_accept_length"] = (tot["accepted"] / (tot["steps"] - tot["plain_steps"])
                                 if tot["steps"] > tot["plain_steps"] else None)
    widths: dict[str, int] = {}
    for s in specs:
        for w, n in (s.get("widths") or {}).items():
            widths[w] = widths.get(w, 0) + n
    tot["widths"] = widths
    # A decode step's forward alone, as this arm's width policy measured it (median over items).
    fwd = sorted(s["decode_forward_s"] for s in specs if s.get("decode_forward_s"))
    tot["decode_forward_s"] = fwd[len(fwd) // 2] if fwd else None
    tot["drafter"] = specs[0].get("drafter")
    tot["loop"] = specs[0].get("loop", "engine (C++ speculative loop)")
    return tot


def arm_summaries(arms: list[Arm], per_arm: dict[str, list]) -> list[dict[str, Any]]:
    """One entry per arm: sha256 over its items' tokens, identity, divergences, speed on the
    non-warmup items (tokens over decode seconds) and its speculation totals."""
    out = []
    base = None
    for arm in arms:
        runs = per_arm[arm.name]
        timed = [(it, r) for it, r, _ in runs if not it.get("warmup")]
        tokens = sum(len(r.tokens) for _, r in timed)
        decode_s = sum(r.decode_s for _, r in timed)
        row: dict[str, Any] = {**arm.as_dict(), "sha256": tokens_sha256([r.tokens for _, r, _ in runs]),
                               "items": len(runs), "tokens": sum(len(r.tokens) for _, r, _ in runs),
                               "identical": all(d is None for _, _, d in runs),
                               "divergences": [{"item": it["id"], **d} for it, _, d in runs if d is not None],
                               "timed_tokens": tokens, "decode_s": decode_s,
                               "tok_s": tokens / decode_s if decode_s > 0 else None,
                               "speculation": _spec_totals(runs)}
        if arm.name == TARGET_ONLY:
            base = row
            row["speedup"] = 1.0 if row["tok_s"] else None
        else:
            row["speedup"] = row["tok_s"] / base["tok_s"] if base and base["tok_s"] and row["tok_s"] else None
        out.append(row)
    # What one verify costs in decode forwards: its mean seconds over a decode step's forward alone
    # (the median any arm's policy measured in this run; both are forward time only, without the
    # sampling and bookkeeping a token costs around it). The ideal speedup is what a free drafter
    # at this acceptance would give: tokens per forward over that cost.
    fwd = sorted(r["speculation"]["decode_forward_s"] for r in out
                 if r["speculation"] and r["speculation"].get("decode_forward_s"))
    decode_forward = fwd[len(fwd) // 2] if fwd else None
    for row in out:
        sp = row["speculation"]
        if not (sp and decode_forward and sp["steps"] and sp["tokens_per_forward"]):
            continue
        ratio = (sp["verify_s"] / sp["steps"]) / decode_forward
        row["verify_cost_ratio"] = ratio
        row["ideal_speedup"] = sp["tokens_per_forward"] / ratio
        row["fraction_of_ideal"] = row["speedup"] / row["ideal_speedup"] if row["speedup"] else None
    return out


def summary_md(r: dict[str, Any]) -> str:
    lines = [f"## Verdict: {r['verdict']}", "", f"Suite `{r['suite']['id']}` ({r['suite']['items']} items), greedy. "
             f"Rule: {r['rule']}.", "",
             "| arm | identical | tok/s | vs target-only | acceptance | tokens/forward | verify cost | ideal | "
             "of ideal | sha256 |", "|---|---|---|---|---|---|---|---|---|---|"]
    def num(v, fmt, unit=""):
        return "n/a" if v is None else format(v, fmt) + unit

    for a in r["arms"]:
        sp = a["speculation"] or {}
        lines.append(f"| {a['name']} | {'yes' if a['identical'] else '**no**'} | {num(a['tok_s'], '.2f')} | "
                     f"{num(a['speedup'], '.2f', 'x')} | {num(sp.get('acceptance_rate'), '.1%')} | "
                     f"{num(sp.get('tokens_per_forward'), '.2f')} | {num(a.get('verify_cost_ratio'), '.2f')} | "
                     f"{num(a.get('ideal_speedup'), '.2f', 'x')} | {num(a.get('fraction_of_ideal'), '.0%')} | "
                     f"`{a['sha256'][:16]}` |")
    for a in r["arms"]:
        for d in a["divergences"]:
            lines += ["", f"### {a['name']} diverges on `{d['item']}` at token {d['index']}",
                      f"- reference: token {d['reference']['token']}, top {d['reference']['top'][:3]}",
                      f"- arm: token {d['arm']['token']}, top {d['arm']['top'][:3]}",
                      f"- reference top-2 margin: {d['reference_top2_margin']}",
                      f"- produced by: {d['verify']}"]
    for n in r.get("notes", []):
        lines += ["", f"- note: {n}"]
    return "\n".join(lines) + "\n"


def plot_identity(path: Path, arms: list[dict[str, Any]]) -> None:
    """Left: tok/s per arm (target-only dashed). Right: acceptance by draft position per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = [a["name"] for a in arms]
    speeds = [a["tok_s"] or 0.0 for a in arms]
    colours = ["tab:gray" if a["name"] == TARGET_ONLY else ("tab:green" if a["identical"] else "tab:red") for a in arms]
    ax1.bar(range(len(arms)), speeds, color=colours)
    ax1.set_xticks(range(len(arms)), names, rotation=45, ha="right", fontsize=8)
    ax1.set_ylabel("tok/s (non-warmup items)")
    if speeds and speeds[0]:
        ax1.axhline(speeds[0], ls="--", color="tab:gray", lw=1)
    ax1.set_title("speed by arm (red: diverged)")
    for a in arms:
        acc = (a["speculation"] or {}).get("acceptance_by_position")
        if acc and any(v is not None for v in acc):
            xs = [i + 1 for i, v in enumerate(acc) if v is not None]
            ax2.plot(xs, [v for v in acc if v is not None], marker="o", label=a["name"])
    ax2.set_xlabel("draft position")
    ax2.set_ylabel("accepted / tried")
    ax2.set_ylim(-0.05, 1.05)
    ax2.set_title("acceptance by position")
    if ax2.lines:
        ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
