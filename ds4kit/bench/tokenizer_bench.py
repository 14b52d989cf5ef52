"""`ds4kit bench tokenizer`: our C++ tokenizer against HF tokenizers, single-threaded.

Both encode the same corpus (ds4kit.bench.tokenizer_corpus), one ``encode`` call
per document, ids compared document by document. HF runs with
RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false, set before ``tokenizers``
is imported. Each side is timed ``repeat`` times, alternating, and the best pass
counts (least disturbed by other load on the machine); our first pass on a fresh
instance is also reported as the cold-cache figure.
"""
from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable

from ds4kit.bench.tokenizer_corpus import build_corpus_by_kind
from ds4kit.reports import start_run

SINGLE_THREAD_ENV = {"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def _time_pass(encode: Callable[[str], list[int]], by_kind: dict[str, list[str]]) -> dict[str, float]:
    seconds = {}
    for kind, docs in by_kind.items():
        t0 = time.perf_counter()
        for doc in docs:
            encode(doc)
        seconds[kind] = time.perf_counter() - t0
    return seconds


def _side(passes: list[dict[str, float]], kind_bytes: dict[str, int]) -> dict[str, Any]:
    totals = [sum(p.values()) for p in passes]
    best = min(range(len(passes)), key=lambda i: totals[i])
    total_bytes = sum(kind_bytes.values())
    return {
        "seconds_best": round(totals[best], 6),
        "seconds_median": round(statistics.median(totals), 6),
        "mb_per_s": round(total_bytes / totals[best] / 1e6, 4),
        "mb_per_s_by_kind": {k: round(kind_bytes[k] / max(s, 1e-9) / 1e6, 4) for k, s in passes[best].items()},
    }


def run_tokenizer_bench(size_mb: float = 2.0, out: str | Path | None = None, *, seed: int = 0, repeat: int = 3,
                        command: list[str] | None = None) -> Path:
    if size_mb <= 0:
        raise ValueError(f"--size-mb must be positive, got {size_mb}")
    if repeat < 1:
        raise ValueError(f"--repeat must be at least 1, got {repeat}")
    for k, v in SINGLE_THREAD_ENV.items():
        os.environ[k] = v

    import tokenizers

    from ds4kit import _engine
    from ds4kit.tokenizer_vocab import deepseek_tokenizer_json_path, load_deepseek_tokenizer_json

    with start_run("bench-tokenizer", out, command=command) as run:
        by_kind = build_corpus_by_kind(int(size_mb * 1e6), seed)
        kind_bytes = {k: sum(len(d.encode("utf-8")) for d in docs) for k, docs in by_kind.items()}

        t0 = time.perf_counter()
        vocab = load_deepseek_tokenizer_json()
        t1 = time.perf_counter()
        ours = _engine.Tokenizer(*vocab.engine_args())
        t2 = time.perf_counter()
        hf = tokenizers.Tokenizer.from_file(str(deepseek_tokenizer_json_path()))
        t3 = time.perf_counter()

        def ours_encode(doc: str) -> list[int]:
            return ours.encode(doc)

        def hf_encode(doc: str) -> list[int]:
            return hf.encode(doc, add_special_tokens=False).ids

        # Correctness first (also warms both sides' caches after ours' cold pass).
        cold = _time_pass(ours_encode, by_kind)
        mismatched, tokens = [], 0
        for kind, docs in by_kind.items():
            for i, doc in enumerate(docs):
                ids = ours_encode(doc)
                tokens += len(ids)
                if ids != hf_encode(doc):
                    mismatched.append(f"{kind}[{i}]")
        if mismatched:
            run.warn("ids-differ", f"{len(mismatched)} documents tokenize differently from HF, e.g. {mismatched[:5]}")

        ours_passes, hf_passes = [], []
        for _ in range(repeat):
            ours_passes.append(_time_pass(ours_encode, by_kind))
            hf_passes.append(_time_pass(hf_encode, by_kind))

        total_bytes = sum(kind_bytes.values())
        ours_res = _side(ours_passes, kind_bytes)
        ours_res["mb_per_s_cold"] = round(total_bytes / sum(cold.values()) / 1e6, 4)
        ours_res["build_s"] = round(t2 - t1, 4)
        ours_res["vocab_load_s"] = round(t1 - t0, 4)
        hf_res = _side(hf_passes, kind_bytes)
        hf_res["build_s"] = round(t3 - t2, 4)
        hf_res["tokenizers_version"] = tokenizers.__version__
        hf_res["env"] = dict(SINGLE_THREAD_ENV)
        ratio = ours_res["mb_per_s"] / hf_res["mb_per_s"]

        results = {
            "corpus": {"bytes": total_bytes, "documents": sum(len(d) for d in by_kind.values()), "seed": seed,
                       "bytes_by_kind": kind_bytes, "tokens": tokens},
            "repeat": repeat,
            "ids_identical": not mismatched,
            "mismatched_documents": mismatched[:50],
            "ours": ours_res,
            "hf": hf_res,
            "ratio": round(ratio, 4),
            "target_met": ratio >= 1.0,
            "unicode_version": _engine.tokenizer_unicode_version,
        }
        run.finish(results, summary_md=_summary(results))
        return run.folder


def _summary(r: dict[str, Any]) -> str:
    lines = [
        f"Corpus: {r['corpus']['bytes'] / 1e6:.2f} MB, {r['corpus']['documents']} documents, "
        f"{r['corpus']['tokens']} tokens; ids identical to HF: **{r['ids_identical']}**.",
        "",
        "| | ours (C++) | HF tokenizers (1 thread) |",
        "|---|---|---|",
        f"| encode MB/s (best of {r['repeat']}) | {r['ours']['mb_per_s']:.2f} | {r['hf']['mb_per_s']:.2f} |",
        f"| cold cache MB/s | {r['ours']['mb_per_s_cold']:.2f} | |",
        f"| build s | {r['ours']['build_s']:.3f} | {r['hf']['build_s']:.3f} |",
        "",
        f"Ratio ours/HF: **{r['ratio']:.2f}x** (target >= 1: {'met' if r['target_met'] else 'NOT met'}).",
        "",
        "| kind | ours MB/s | HF MB/s |",
        "|---|---|---|",
    ]
    for kind, v in r["ours"]["mb_per_s_by_kind"].items():
        lines.append(f"| {kind} | {v:.2f} | {r['hf']['mb_per_s_by_kind'][kind]:.2f} |")
    return "\n".join(lines) + "\n"
