"""The files `ds4kit bench engine` writes besides report.json: results.csv, bench.png, summary.md."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ds4kit.bench.engine_bench import fraction_limits

# One row per engine x test x repetition; build and hardware in every row, as llama-bench does.
CSV_COLUMNS = [
    "ds4kit_commit", "engine", "engine_version", "engine_build", "cpu_info", "cpu_features", "bandwidth_gb_s",
    "matmul_gflop_s", "model_filename", "model_type", "model_size", "model_n_params", "n_threads", "n_batch",
    "n_ctx", "prefill_mode", "test", "n_prompt", "n_gen", "n_depth", "rep", "seconds", "tok_s", "loadavg_1m",
    "test_time",
]


def _cpu_name() -> str:
    from ds4kit.reports.manifest import _cpu_name as name

    return name()


def _engine_build(engine: str, info: dict[str, Any]) -> tuple[str, str]:
    if engine == "ds4kit":
        from ds4kit import __version__

        b = info.get("build_info", {})
        return __version__, f"{b.get('git_sha') or 'unknown'} {b.get('compiler') or ''}".strip()
    version = info.get("version") or "unknown"
    return version, f"llama-cpp-python {version}"


def write_csv(path: Path, results: dict[str, Any], tests: list[dict[str, Any]], model_path: Path) -> list[dict]:
    from ds4kit.reports.manifest import ds4kit_git_sha

    commit = ds4kit_git_sha() or "unknown"
    cpu = _cpu_name()
    st, hw, model = results["settings"], results["hardware"], results["model"]
    rows = []
    limits = hw.get("limits") or fraction_limits(hw, False)  # what the fractions divided by
    for engine, e in results["engines"].items():
        if e["status"] != "ok":
            continue
        info = e.get("info", {})
        version, build = _engine_build(engine, info)
        for t in tests:
            s = e["tests"].get(t["name"])
            if s is None:  # an interrupted run: this test never ran on this engine
                continue
            for rep, seconds in enumerate(s["seconds"]):
                rows.append({
                    "ds4kit_commit": commit, "engine": engine, "engine_version": version, "engine_build": build,
                    "cpu_info": cpu, "cpu_features": (results["engines"].get("ds4kit", {}).get("info", {})
                                                      .get("cpu_features") or "n/a"),
                    "bandwidth_gb_s": _per_1e9(limits["bandwidth_bytes_per_s"]),
                    "matmul_gflop_s": _per_1e9(limits["matmul_flop_per_s"]),
                    "model_filename": str(model_path), "model_type": f"{model['architecture']} {model['name']}",
                    "model_size": model["size_bytes"], "model_n_params": model["n_params"],
                    "n_threads": st["threads"], "n_batch": st["n_batch"], "n_ctx": st["n_ctx"],
                    "prefill_mode": st["prefill_mode"] if engine == "ds4kit" else "n_batch",
                    "test": t["name"], "n_prompt": t["n"] if t["kind"] == "pp" else 0,
                    "n_gen": t["n"] if t["kind"] in ("tg", "gen") else 0, "n_depth": t["depth"], "rep": rep,
                    "seconds": f"{seconds:.9f}",
                    "tok_s": f"{s['n_tokens'] / seconds:.4f}", "loadavg_1m": e["rep_loadavg"][t["name"]][rep][0],
                    "test_time": e["rep_utc"][t["name"]][rep],
                })
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return rows


def plot_bench(path: Path, results: dict[str, Any], test_names: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines = [e for e, r in results["engines"].items() if r["status"] == "ok"]
    fig, axes = plt.subplots(1, len(test_names), figsize=(3.2 * len(test_names) + 1, 4), squeeze=False)
    colours = {"ds4kit": "#1f77b4", "llama.cpp": "#ff7f0e"}
    for ax, name in zip(axes[0], test_names):
        ran = [e for e in engines if name in results["engines"][e]["tests"]]
        vals = [results["engines"][e]["tests"][name]["tok_s"] for e in ran]
        errs = [results["engines"][e]["tests"][name]["tok_s_stddev"] for e in ran]
        ax.bar(ran, vals, yerr=errs, capsize=5, color=[colours.get(e, "grey") for e in ran])
        ax.set_title(name)
        ax.set_ylabel("tok/s")
        ratio = results["ratios"].get(name)
        text = f"ds4kit/llama.cpp: means {ratio['ratio']:.2f}x, best {ratio['ratio_best']:.2f}x" if ratio else "no ratio"
        ax.annotate(text, xy=(0.5, 0.97),
                    xycoords="axes fraction", ha="center", va="top", fontsize=9)
        ax.set_ylim(0, max(v + e for v, e in zip(vals, errs)) * 1.25 if vals else 1)
    st = results["settings"]
    fig.suptitle(f"{results['model']['name']}: {st['threads']} threads, {st['reps']} reps (mean +- stddev)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_frontier(path: Path, results: dict[str, Any], tests: list[dict[str, Any]]) -> None:
    """tok/s against context depth: one panel per pp/tg size, one line per engine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines = [e for e, r in results["engines"].items() if r["status"] == "ok"]
    bases = list(dict.fromkeys(t["base"] for t in tests))
    fig, axes = plt.subplots(1, len(bases), figsize=(4 * len(bases) + 1, 4), squeeze=False)
    colours = {"ds4kit": "#1f77b4", "llama.cpp": "#ff7f0e"}
    for ax, base in zip(axes[0], bases):
        mine = [t for t in tests if t["base"] == base]
        for e in engines:
            pts = [(t["depth"], results["engines"][e]["tests"][t["name"]]) for t in mine
                   if t["name"] in results["engines"][e]["tests"]]
            if pts:
                ax.errorbar([d for d, _ in pts], [s["tok_s"] for _, s in pts], yerr=[s["tok_s_stddev"] for _, s in pts],
                            marker="o", capsize=4, label=e, color=colours.get(e, "grey"))
        ax.set_title(base)
        ax.set_xlabel("context depth (tokens)")
        ax.set_ylabel("tok/s")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    st = results["settings"]
    fig.suptitle(f"{results['model']['name']}: tok/s by context depth ({st['threads']} threads, backend "
                 f"{st['backend']}, {st['reps']} reps)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _gb(x: float) -> str:
    return f"{x / 1e9:.2f}"


def _per_1e9(x: float | None) -> float | str:
    return round(x / 1e9, 3) if x else "n/a"


def _device_limits_line(hw: dict[str, Any]) -> list[str]:
    """The summary's line on the GPU's limits, when the fractions divide by them."""
    lim = hw.get("limits") or {}
    if lim.get("on") != "device":
        return []
    dev = hw.get("device") or {}
    if not lim.get("bandwidth_bytes_per_s"):
        return [f"GPU limits: not measured ({dev.get('error', 'no device probe')}): no fractions."]
    peak = (f"dense bf16 matrix peak {lim['matmul_flop_per_s'] / 1e12:.1f} TFLOP/s as stated ({lim['matmul_source']})"
            if lim.get("matmul_flop_per_s") else f"no bf16 matrix peak ({lim.get('matmul_source')}): no prefill fractions")
    return [f"GPU limits the fractions divide by: {dev['device']} ({dev['arch']}, {dev['multiprocessors']} "
            f"multiprocessors) memory bandwidth {_gb(dev['bytes_per_s'])} GB/s measured (read "
            f"{_gb(dev['read_bytes_per_s'])}, copy {_gb(dev['copy_bytes_per_s'])}, {dev['array_bytes'] / 2**20:.0f} MiB "
            f"arrays); {peak}."]


def render_summary(results: dict[str, Any], test_names: list[str]) -> str:
    st, hw = results["settings"], results["hardware"]
    eng = results["engines"]
    ok = [e for e, r in eng.items() if r["status"] == "ok"]
    lines = [f"Model {results['model']['name']} ({results['model']['size_bytes'] / 1e6:.0f} MB, "
             f"{results['model']['n_params'] / 1e6:.1f} M params); {st['threads']} threads, {st['reps']} reps, "
             f"ds4kit prefill mode {st['prefill_mode']}, n_batch {st['n_batch']}, n_ctx {st['n_ctx']}. "
             f"Load average at start {results['loadavg']['start']}, at end {results['loadavg']['end']}. "
             "Engines alternate repetition by repetition (A B, B A, ...).", ""]
    if not results["ratio_measured"]:
        lines += ["**NO RATIO: llama.cpp did not run, so nothing was compared.**", ""]
    numerics = results.get("numerics")
    if numerics and "llama.cpp" in eng:
        lines += [f"Numerics: {numerics['note']}.", ""]
    header = ("| test | " + " | ".join(f"{e} tok/s (mean +- sd)" for e in ok)
              + " | ratio ds4kit/llama.cpp (means) | ratio of best reps |")
    lines += [header, "|---" * (len(ok) + 3) + "|"]
    for name in test_names:
        cells = [f"{eng[e]['tests'][name]['tok_s']:.2f} +- {eng[e]['tests'][name]['tok_s_stddev']:.2f}"
                 if name in eng[e]["tests"] else "not run" for e in ok]
        r = results["ratios"].get(name)
        ratio = f"{r['ratio']:.2f}x | {r['ratio_best']:.2f}x" if r else "n/a | n/a"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio} |")
    lines += ["", "| engine | status | load s | peak RSS MB | " + " | ".join(f"{n} % of limit" for n in test_names) + " |",
              "|---" * (4 + len(test_names)) + "|"]
    for e, r in eng.items():
        frac = [f"{100 * r['fractions'][n]:.1f}" if n in r.get("fractions", {}) else "-" for n in test_names]
        rss = f"{r['peak_rss_bytes'] / 1e6:.0f}" if "peak_rss_bytes" in r else "-"
        load = f"{r['load_s']:.2f}" if "load_s" in r else "-"
        lines.append(f"| {e} | {r['status']} | {load} | {rss} | " + " | ".join(frac) + " |")
    spec = results.get("speculation") or {}
    if spec:
        lines += ["", "| DSpark | off tok/s | on tok/s | speedup | acceptance | same tokens |", "|---|---|---|---|---|---|"]
        for name, sp in spec.items():
            acc = f"{sp['acceptance_rate']:.2f}" if sp["acceptance_rate"] is not None else "-"
            lines.append(f"| {name} | {sp['off_tok_s']:.2f} | {sp['on_tok_s']:.2f} | {sp['speedup']:.2f}x | {acc} | "
                         f"{'yes' if sp['tokens_identical'] else '**NO**'} |")
    w = results["work_per_token"]
    lines += ["", f"Hardware limits measured in this run: memory bandwidth {_gb(hw['bandwidth']['bytes_per_s'])} GB/s "
              f"(copy {_gb(hw['bandwidth']['copy_bytes_per_s'])}, add {_gb(hw['bandwidth']['add_bytes_per_s'])}, "
              f"{hw['bandwidth']['array_bytes'] / 2**20:.0f} MiB arrays), float32 matmul "
              f"{hw['matmul']['flop_per_s'] / 1e9:.1f} GFLOP/s ({hw['matmul'].get('blas')}).",
              *_device_limits_line(hw),
              f"Work: {w['decode_bytes']['total'] / 1e6:.2f} MB of weights read per decoded token; "
              f"{w['prefill_params']['per_token'] / 1e6:.2f} M matmul parameters per prompt token "
              f"(+{w['prefill_params']['output_head'] / 1e6:.2f} M output head once per prefill).", "",
              f"- decode fraction: {results['definitions']['decode']}",
              f"- prefill fraction: {results['definitions']['prefill']}", ""]
    for e in ok:
        comp = eng[e].get("info", {}).get("computes")
        if comp:
            lines.append(f"- {e} computes: {comp}")
    return "\n".join(lines) + "\n"
