"""`ds4kit model synth`: write a synthetic deepseek4 target GGUF (and a DSpark drafter)."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import click

from ds4kit.reports import start_run

_LARGE_BYTES = 16 << 30

# CLI flag -> SynthConfig field, for the dimensions people change most; --set reaches every field.
_DIM_FLAGS = {
    "layers": "n_layer", "embd": "n_embd", "heads": "n_head", "head_dim": "head_dim", "rope_dims": "n_rot",
    "q_lora": "q_lora_rank", "o_lora": "o_lora_rank", "o_groups": "o_groups", "experts": "n_expert",
    "experts_used": "n_expert_used", "expert_ff": "expert_ff", "hash_layers": "hash_layers",
    "swa": "swa_window", "indexer_heads": "indexer_heads", "indexer_top_k": "indexer_top_k",
}


def _pairs(values: tuple[str, ...], what: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        if "=" not in v:
            raise click.BadParameter(f"{v!r} is not {what}=VALUE")
        k, _, val = v.partition("=")
        out.append((k.strip(), val.strip()))
    return out


def _dim_options(f):
    for flag in reversed(list(_DIM_FLAGS)):
        f = click.option(f"--{flag.replace('_', '-')}", flag, type=int, default=None,
                         help=f"Override {_DIM_FLAGS[flag]}.")(f)
    return f


@click.command("synth")
@click.argument("out_gguf", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--preset", "preset_name", default="tiny", show_default=True,
              help="Starting dimensions: tiny, small, medium, demo or full.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True, help="Weights seed.")
@_dim_options
@click.option("--ratios", default=None, help="Per-layer compress ratios, comma separated (0, 4 or 128).")
@click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE",
              help="Override any config field (repeatable), e.g. --set indexer_dim=128.")
@click.option("--types", "type_pairs", multiple=True, metavar="GROUP=TYPE",
              help="Tensor type per group (repeatable): groups embed output attn attn_out compressor indexer "
                   "router shared experts hc dflash; types F32 F16 BF16 Q8_0 Q4_0 Q4_K Q2_K IQ2_XXS MXFP4 "
                   "and ROCmFP 100 101 102 103 104 107.")
@click.option("--drafter", "drafter_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a DSpark drafter GGUF (deepseek4-dflash-draft) here.")
@click.option("--allow-large", is_flag=True, help="Allow files over 16 GiB (the full preset is about 153 GiB).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: for files over 64 MB).")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Processes generating tensors in parallel (the file's bytes do not depend on it).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Run folder for the report (default runs/model-synth-<utc>/).")
def synth(out_gguf: Path, preset_name: str, seed: int, ratios: str | None, sets: tuple[str, ...],
          type_pairs: tuple[str, ...], drafter_path: Path | None, allow_large: bool, progress: bool | None,
          jobs: int, out: Path | None,
          **dims: int | None) -> None:
    """Write a synthetic DeepSeek V4 Flash GGUF of any dimensions, deterministic from --seed."""
    from ds4kit.synth import parse_override, preset, resolve_types, write_drafter, write_target
    from ds4kit.synth.build import planned_bytes

    try:
        cfg = preset(preset_name)
        for flag, value in dims.items():
            if value is not None:
                cfg = cfg.replace(**{_DIM_FLAGS[flag]: value})
        if ratios is not None:
            cfg = parse_override(cfg, "compress_ratios", ratios)
        for key, value in _pairs(sets, "FIELD"):
            cfg = parse_override(cfg, key, value)
        types = resolve_types(dict(_pairs(type_pairs, "GROUP")))
        cfg.validate()
        total = planned_bytes(cfg, types)
        if drafter_path is not None:
            total += planned_bytes(cfg, types, drafter=True)
        if total > _LARGE_BYTES and not allow_large:
            raise ValueError(f"these files would hold {total / 2**30:.1f} GiB of tensors; "
                             "pass --allow-large if you really want that")
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None

    with start_run("model-synth", out) as run:
        t0 = time.monotonic()
        target = write_target(out_gguf, cfg, seed=seed, types=types, progress=progress, jobs=jobs)
        for w in target.warnings:
            run.warn("synth-llama-incompatible", w)
        run.set_model(_manifest_entry(target))
        drafter = None
        if drafter_path is not None:
            drafter = write_drafter(drafter_path, cfg, seed=seed, types=types, progress=progress, jobs=jobs)
            run.set_model(_manifest_entry(drafter), role="drafter")
        results = {
            "preset": cfg.name, "seed": seed,
            "config": {**dataclasses.asdict(cfg), "compress_ratios": list(cfg.ratios),
                       "draft_capture_layers": list(cfg.capture_layers)},
            "types": types, "target": target.as_dict(), "drafter": drafter.as_dict() if drafter else None,
            "llama_cpp_loadable": not target.warnings, "seconds": round(time.monotonic() - t0, 3),
        }
        run.finish(results, summary_md=_summary(results))
        click.echo(f"wrote {target.path} ({target.size_bytes / 1e6:.1f} MB, sha256 {target.sha256[:16]}...)")
        if drafter:
            click.echo(f"wrote {drafter.path} ({drafter.size_bytes / 1e6:.1f} MB, sha256 {drafter.sha256[:16]}...)")
        click.echo(f"report: {run.folder / 'report.json'}", err=True)


def _manifest_entry(w) -> dict:
    return {"path": w.path, "size_bytes": w.size_bytes, "sha256": w.sha256, "architecture": w.architecture,
            "name": Path(w.path).name, "quant_mix": w.quant_mix}


def _summary(r: dict) -> str:
    c = r["config"]
    lines = [f"Synthetic `deepseek4` model, preset **{r['preset']}**, seed {r['seed']}.", "",
             f"- layers {c['n_layer']}, n_embd {c['n_embd']}, heads {c['n_head']}x{c['head_dim']}, "
             f"experts {c['n_expert']}/{c['n_expert_used']}, ratios {c['compress_ratios']}",
             "- types: " + ", ".join(f"{k}={v}" for k, v in sorted(r["types"].items())),
             f"- llama.cpp loadable: {r['llama_cpp_loadable']}", ""]
    for role in ("target", "drafter"):
        w = r[role]
        if w:
            lines.append(f"- {role}: `{w['path']}` {w['size_bytes']:,} bytes, {w['n_tensors']} tensors, "
                         f"sha256 `{w['sha256']}`")
    return "\n".join(lines) + "\n"


commands = [synth]
