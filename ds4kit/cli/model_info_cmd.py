"""`ds4kit model info | hash | tokenize`: look inside a GGUF without running it."""
from __future__ import annotations

import json
from pathlib import Path

import click

from ds4kit.reports import start_run


def _model_or_demo(model: Path | None) -> Path:
    from ds4kit.targets.options import model_path_or_synthetic

    return model_path_or_synthetic(model, say=lambda m: click.echo(m, err=True), model_flag="MODEL")


def _resolve_card(mf, card_path):
    from ds4kit.cards import resolve_card

    # announce=False: Run.set_card prints the warning once and records it in the report.
    return resolve_card(mf.path, mf.name, mf.architecture, card_path=card_path, announce=False)


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return str(n)


out_option = click.option("--out", type=click.Path(path_type=Path), default=None,
                          help="Run folder (default runs/<kind>-<utc>/).")


@click.command("info")
@click.argument("model", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--card", "card_path", type=click.Path(path_type=Path), default=None, help="Model card JSON to use.")
@click.option("--hash/--no-hash", "do_hash", default=True, help="Include the file's sha256 (cached).")
@out_option
def info(model: Path | None, card_path: Path | None, do_hash: bool, out: Path | None) -> None:
    """Hyperparameters, tensor-type mix, bytes, bytes read per decoded token, card resolution."""
    from rich.console import Console
    from rich.table import Table

    from ds4kit.engine import open_model_file
    from ds4kit.model_hash import sha256_with_progress

    model = _model_or_demo(model)
    with start_run("model-info", out) as run:
        mf = open_model_file(model)
        sha = sha256_with_progress(model).sha256 if do_hash else None
        run.set_model(mf.manifest_entry(sha))
        card = _resolve_card(mf, card_path)
        run.set_card(card.to_manifest())
        per_token = mf.bytes_per_decoded_token()
        results = {
            "file": {"path": str(mf.path), "size_bytes": mf.size_bytes, "gguf_version": int(mf.gguf.version),
                     "alignment": int(mf.gguf.alignment), "n_tensors": len(mf.tensors),
                     "n_metadata": len(mf.metadata), "sha256": sha},
            "architecture": mf.architecture,
            "name": mf.name,
            "hparams": mf.hparams(),
            "tokenizer": mf.tokenizer_summary(),
            "quant_mix": mf.quant_mix(),
            "tensor_bytes": mf.tensor_bytes(),
            "bytes_per_decoded_token": per_token,
            "card": card.to_manifest(),
        }
        con = Console(stderr=False)
        con.print(f"[bold]{mf.name or mf.path.name}[/bold]  arch={mf.architecture}  "
                  f"{_human(mf.size_bytes)}  GGUF v{mf.gguf.version}  {len(mf.tensors)} tensors")
        hp = Table("hparam", "value", title="hyperparameters")
        for k, v in results["hparams"].items():
            text = json.dumps(v) if not isinstance(v, str) else v
            hp.add_row(k, text if len(text) < 80 else text[:77] + "...")
        con.print(hp)
        qt = Table("type", "tensors", "elements", "bytes", title="tensor-type mix")
        for name, m in results["quant_mix"].items():
            qt.add_row(name, str(m["tensors"]), f"{m['elements']:,}", _human(m["bytes"]))
        con.print(qt)
        con.print(f"bytes read per decoded token: {_human(per_token['total'])} "
                  f"(dense {_human(per_token['dense'])}, routed experts {_human(per_token['routed_experts'])} "
                  f"at {per_token['expert_fraction']}, embedding row {_human(per_token['embedding_row'])}; KV not counted)")
        con.print(f"model card: {card.name} via {card.source}" + (f" ({card.path})" if card.path else ""))
        if sha:
            con.print(f"sha256: {sha}")
        run.finish(results, summary_md=_info_summary(results))
        click.echo(f"report: {run.folder / 'report.json'}", err=True)


def _info_summary(r: dict) -> str:
    lines = [f"## {r['name']} ({r['architecture']})", "",
             f"- size: {r['file']['size_bytes']} bytes, {r['file']['n_tensors']} tensors",
             f"- bytes per decoded token: {r['bytes_per_decoded_token']['total']}",
             f"- card: {r['card']['name']} via {r['card']['source']}", "", "| type | tensors | bytes |", "|---|---|---|"]
    for name, m in r["quant_mix"].items():
        lines.append(f"| {name} | {m['tensors']} | {m['bytes']} |")
    return "\n".join(lines) + "\n"


@click.command("hash")
@click.argument("model", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@out_option
def hash_(model: Path, out: Path | None) -> None:
    """sha256 of MODEL, cached by path, size and mtime (a 100 GB file is hashed once)."""
    from ds4kit.model_hash import sha256_with_progress

    with start_run("model-hash", out) as run:
        res = sha256_with_progress(model)
        run.set_model({"path": res.path, "size_bytes": res.size_bytes, "sha256": res.sha256})
        click.echo(f"{res.sha256}  {model}" + ("  (cached)" if res.cached else ""))
        run.finish({"path": res.path, "size_bytes": res.size_bytes, "mtime_ns": res.mtime_ns,
                    "sha256": res.sha256, "cached": res.cached},
                   summary_md=f"`{res.sha256}`  {res.path}\n")


@click.command("tokenize")
@click.argument("model", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--text", "-t", default=None, help="Text to tokenize.")
@click.option("--file", "-f", "file_", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="File whose bytes to tokenize.")
@click.option("--no-special", is_flag=True, help="Treat special-token strings as plain text.")
@click.option("--json", "as_json", is_flag=True, help="Print ids and pieces as JSON.")
@out_option
def tokenize(model: Path | None, text: str | None, file_: Path | None, no_special: bool, as_json: bool,
             out: Path | None) -> None:
    """Token ids and pieces of --text or --file, with MODEL's own tokenizer (for debugging prompts)."""
    from ds4kit.engine import open_model_file
    from ds4kit import _engine

    if (text is None) == (file_ is None):
        raise click.UsageError("give exactly one of --text or --file")
    model = _model_or_demo(model)
    data: bytes = text.encode("utf-8") if text is not None else file_.read_bytes()
    with start_run("model-tokenize", out) as run:
        mf = open_model_file(model)
        run.set_model(mf.manifest_entry())
        tok = _engine.Tokenizer.from_gguf(mf.gguf)
        ids = list(tok.encode(data, not no_special))
        pieces = [tok.decode([i]).decode("utf-8", errors="backslashreplace") for i in ids]
        roundtrip = tok.decode(ids) == data
        if not roundtrip:
            run.warn("tokenizer-roundtrip", "decode(encode(input)) differs from the input bytes")
        if as_json:
            click.echo(json.dumps({"ids": ids, "pieces": pieces}, ensure_ascii=False))
        else:
            for i, p in zip(ids, pieces):
                click.echo(f"{i:>7}  {p!r}")
            click.echo(f"{len(ids)} tokens, {len(data)} bytes", err=True)
        run.finish({"n_tokens": len(ids), "n_bytes": len(data), "ids": ids, "pieces": pieces,
                    "parse_special": not no_special, "roundtrip_exact": roundtrip},
                   summary_md=f"{len(ids)} tokens for {len(data)} bytes\n")


@click.command("card")
@click.argument("model", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--card", "card_path", type=click.Path(path_type=Path), default=None, help="Model card JSON to use.")
@click.option("--max-tokens", type=int, default=None, help="Generation budget (default: the card's max_tokens).")
@click.option("--max-ctx", type=int, default=None, help="Context size, which also caps the thinking budget.")
@click.option("--effort", "efforts", multiple=True, help="Reasoning effort tier(s) to derive (default: all).")
@out_option
def card(model: Path | None, card_path: Path | None, max_tokens: int | None, max_ctx: int | None,
         efforts: tuple[str, ...], out: Path | None) -> None:
    """Which model card applies to MODEL, where it came from, and the thinking budget per effort."""
    from ds4kit.cards.report import card_results, record_card
    from ds4kit.engine import open_model_file

    model = _model_or_demo(model)
    with start_run("model-card", out) as run:
        mf = open_model_file(model)
        run.set_model(mf.manifest_entry())
        res = _resolve_card(mf, card_path)
        results, budgets = card_results(res, max_tokens=max_tokens, max_ctx=max_ctx, efforts=efforts or None)
        record_card(run, res, budgets)
        click.echo(f"card: {res.name} via {res.source}" + (f" ({res.path})" if res.path else ""))
        for b in results["budgets"]:
            click.echo(f"  effort {b['reasoning_effort']}: thinking {b['tokens']} tokens, reply {b['reply_budget']}"
                       + (f" (clamped by {b['clamped_by']})" if b["clamped_by"] else ""))
        run.finish(results)


commands = [info, hash_, tokenize, card]
