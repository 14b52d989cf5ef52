"""The DSpark drafter forward (engine Ds4Drafter, issue 9 item 1) against its float64
reference (tests/reference/ds4_ref_drafter.py), fed the target engine's captured features.

Features: Session(capture_layers = the drafter's dflash.capture_layer_ids, capture_at="output"):
Lucebox's runtime captures after those layers (deepseek4_dspark.h: "captures h.mean(dim=2)
after each of dspark_target_layer_ids"); the engine also offers "input" (L's newer converter
notes), which changes only what is fed, not the drafter forward tested here.

Tolerance: as the target's forward tests with the roundings off, per candidate
max|got - want| <= 2e-4 * max|want| for the logits (LM head + Markov head), and
|got - want| <= 2e-4 for the confidences (sigmoids in (0, 1)). The reference is given the
engine's chosen candidates as the chain's prev tokens (so one near tie cannot change the
next row's input); the engine's candidates must be the reference logits' argmax wherever the
top-2 margin is clear of the tolerance."""
import numpy as np
import pytest

from engine_fixtures import reference_weights, tmp_dir  # sets sys.path first
from ds4_ref_drafter import load_drafter, propose  # noqa: E402  (tests/reference)

from ds4kit import _engine

TOL = 2e-4
VOCAB = 1024
MASK = 1000


def _config(**over):
    from ds4kit.synth import preset
    # 6 heads: one full group of 4 and a partial one in the attention kernels; window 16 so a
    # 40-token prompt overflows the drafter's context window.
    return preset("tiny").replace(**{"vocab_size": VOCAB, "draft_mask_token_id": MASK, "n_head": 6, "o_groups": 3,
                                     **over})


def _files(name, **over):
    from ds4kit.synth import write_drafter, write_target
    cfg = _config(**over)
    t, d = tmp_dir() / f"drafter-target-{name}.gguf", tmp_dir() / f"drafter-{name}.gguf"
    if not t.exists():
        write_target(t, cfg, seed=3)
        write_drafter(d, cfg, seed=3)
    return t, d


@pytest.fixture(scope="module")
def files():
    return _files("tiny")


@pytest.fixture(scope="module")
def model(files):
    return _engine.Model(str(files[0]), threads=2)


@pytest.fixture(scope="module")
def drafter(files, model):
    return _engine.Drafter.load(str(files[1]), model)


def _prompt_features(model, drafter, n, seed):
    toks = [int(t) for t in np.random.default_rng(seed).integers(0, VOCAB, n)]
    s = model.session(n + 8, fp8_kv=False, indexer_fp4=False, capture_layers=drafter.capture_layers,
                      capture_at="output")
    logits = s.prefill(toks, mode="exact")
    # Features of positions 0 .. n-1; the seed is the target's next token, at position n.
    return s.captured(), int(np.argmax(logits)), n


@pytest.mark.parametrize("n_ctx", [40, 7, 0])
def test_drafter_matches_the_float64_reference(files, model, drafter, n_ctx):
    ref_d, ref_t = load_drafter(files[1]), reference_weights(files[0])
    if n_ctx:
        feats, seed, pos = _prompt_features(model, drafter, n_ctx, 31 + n_ctx)
    else:
        feats, seed, pos = np.zeros((0, len(drafter.capture_layers), 64), np.float32), 5, 0
    got = drafter.propose(feats, seed, pos)
    B = drafter.block_size
    assert got["logits"].shape == (B, VOCAB) and got["logits"].dtype == np.float32
    assert len(got["tokens"]) == B and got["confidence"].shape == (B,)
    want = propose(ref_d, ref_t, feats.astype(np.float64), seed, pos, prev_tokens=got["tokens"])
    worst = 0.0
    for i in range(B):
        w = want["logits"][i]
        scale = float(np.max(np.abs(w)))
        err = float(np.max(np.abs(got["logits"][i].astype(np.float64) - w)))
        worst = max(worst, err / scale)
        assert err <= TOL * scale, f"candidate {i}: max|got - want| = {err:.3g} > {TOL * scale:.3g}"
        top2 = np.sort(w)[-2:]
        if top2[1] - top2[0] > 2 * TOL * scale:
            assert got["tokens"][i] == int(np.argmax(w)), f"candidate {i}"
    conf_err = float(np.max(np.abs(got["confidence"].astype(np.float64) - want["confidence"])))
    assert conf_err <= TOL
    print(f"n_ctx {n_ctx}: worst logits rel error {worst:.2e}, confidence {conf_err:.2e}")


def _compare(files, model, drafter, n_ctx, seed):
    feats, tok, pos = _prompt_features(model, drafter, n_ctx, seed)
    got = drafter.propose(feats, tok, pos)
    want = propose(load_drafter(files[1]), reference_weights(files[0]), feats.astype(np.float64), tok, pos,
                   prev_tokens=got["tokens"])
    rel = [float(np.max(np.abs(got["logits"][i] - want["logits"][i])) / np.max(np.abs(want["logits"][i])))
           for i in range(drafter.block_size)]
    return max(rel), float(np.max(np.abs(got["confidence"] - want["confidence"])))


def test_the_real_window_and_block(tmp_path):
    """The field's window (128 context rows, from a 150-token prompt), 6 heads (a full and a partial group) and
    block_size 5 with the field's capture layout (the target's last three layers)."""
    files = _files("window128", swa_window=128, n_layer=6, compress_ratios=(0, 4, 128, 4, 128, 0), hash_layers=1)
    m = _engine.Model(str(files[0]), threads=2)
    d = _engine.Drafter.load(str(files[1]), m)
    assert d.max_context == 128 and d.capture_layers == [3, 4, 5]
    worst, conf = _compare(files, m, d, 150, 81)
    assert worst <= TOL and conf <= TOL, (worst, conf)
    print(f"window 128: worst logits rel error {worst:.2e}, confidence {conf:.2e}")


def test_the_window_keeps_the_last_max_context_rows(model, drafter):
    feats, seed, pos = _prompt_features(model, drafter, 40, 41)
    W = drafter.max_context
    assert feats.shape[0] > W
    a = drafter.propose(feats, seed, pos)
    b = drafter.propose(np.ascontiguousarray(feats[-W:]), seed, pos)
    assert np.array_equal(a["logits"], b["logits"]) and a["tokens"] == b["tokens"]


def test_fewer_candidates_are_the_first_of_the_chain(model, drafter):
    """propose(candidates=m) stops the Markov chain after m candidates: they, their logits and
    confidences are the first m of the whole block's, bit for bit."""
    feats, seed, pos = _prompt_features(model, drafter, 40, 41)
    full = drafter.propose(feats, seed, pos)
    B = len(full["tokens"])
    for m in (1, 3, B, B + 5, 0, -2):
        part = drafter.propose(feats, seed, pos, candidates=m)
        k = m if 0 < m < B else B
        assert part["tokens"] == full["tokens"][:k], f"candidates={m}"
        assert np.array_equal(part["logits"], full["logits"][:k])
        if full["confidence"] is not None:
            assert np.array_equal(part["confidence"], full["confidence"][:k])


def test_drafter_is_bitwise_deterministic_across_thread_counts(files):
    outs = []
    for threads in (1, 3):
        m = _engine.Model(str(files[0]), threads=threads)
        d = _engine.Drafter.load(str(files[1]), m)
        feats, seed, pos = _prompt_features(m, d, 30, 51)
        outs.append((feats, d.propose(feats, seed, pos)))
    (f1, p1), (f3, p3) = outs
    assert np.array_equal(f1, f3)
    assert p1["tokens"] == p3["tokens"]
    assert np.array_equal(p1["logits"], p3["logits"]) and np.array_equal(p1["confidence"], p3["confidence"])


def test_the_target_still_runs_after_the_drafter_binds(files):
    m = _engine.Model(str(files[0]), threads=2)
    before = m.session(16).verify([1, 2, 3])
    _engine.Drafter.load(str(files[1]), m)
    assert np.array_equal(m.session(16).verify([1, 2, 3]), before)


def test_confidence_on_the_hidden_state_alone(files):
    """confidence_dim = n_embd: Lucebox's other head (conf . h_pre + b)."""
    import gguf
    from ds4kit.synth import write_drafter
    # A drafter file whose confidence head reads h_pre only: rewrite the plan's dimension.
    cfg = _config()
    path = tmp_dir() / "drafter-conf-e.gguf"
    orig = type(cfg).confidence_dim
    try:
        type(cfg).confidence_dim = property(lambda c: c.n_embd)
        write_drafter(path, cfg, seed=4)
    finally:
        type(cfg).confidence_dim = orig
    assert gguf.GGUFReader(str(path)).fields["deepseek4-dflash-draft.dflash.dspark.confidence_dim"].contents() == 64
    m = _engine.Model(str(files[0]), threads=2)
    d = _engine.Drafter.load(str(path), m)
    assert d.confidence_dim == 64
    feats, seed, pos = _prompt_features(m, d, 12, 61)
    got = d.propose(feats, seed, pos)
    want = propose(load_drafter(path), reference_weights(files[0]), feats.astype(np.float64), seed, pos,
                   prev_tokens=got["tokens"])
    assert float(np.max(np.abs(got["confidence"] - want["confidence"]))) <= TOL


def test_argument_errors(model, drafter):
    feats, seed, pos = _prompt_features(model, drafter, 10, 71)
    with pytest.raises(_engine.ArgumentError, match="features must be"):
        drafter.propose(feats[:, :2], seed, pos)
    with pytest.raises(_engine.ArgumentError, match="before position 0"):
        drafter.propose(feats, seed, 5)
    with pytest.raises(_engine.ArgumentError, match="seed token"):
        drafter.propose(feats, VOCAB, pos)


# ---- load errors: each names the key or tensor at fault

def _write_drafter(name, cfg, monkeypatch=None, drop_tensor=None, rename_key=None):
    from ds4kit.synth import build
    path = tmp_dir() / f"drafter-bad-{name}.gguf"
    if drop_tensor:
        plan = build.drafter_tensors
        monkeypatch.setattr(build, "drafter_tensors", lambda c: [t for t in plan(c) if t.name != drop_tensor])
    if rename_key:
        u32 = build.G.u32
        monkeypatch.setattr(build.G, "u32", lambda k, v: u32("ds4kit.test.renamed" if k.endswith(rename_key) else k, v))
    build.write_drafter(path, cfg, seed=3)
    return path


@pytest.mark.parametrize("tensor", ["dflash.fc.weight", "dflash.dspark.markov.w2", "blk.1.attn_kv.weight",
                                    "output_hc_fn.weight", "dflash.dspark.confidence.bias"])
def test_a_missing_tensor_is_named(model, monkeypatch, tensor):
    path = _write_drafter("missing-" + tensor, _config(), monkeypatch, drop_tensor=tensor)
    with pytest.raises(_engine.FormatError, match=tensor.replace(".", r"\.")):
        _engine.Drafter.load(str(path), model)


@pytest.mark.parametrize("key", ["dflash.block_size", "dflash.mask_token_id", "dflash.dspark.markov_rank",
                                 "dflash.dspark.enabled"])
def test_a_missing_key_is_named(model, monkeypatch, key):
    path = _write_drafter("nokey-" + key, _config(), monkeypatch, rename_key=key)
    with pytest.raises(_engine.FormatError, match="deepseek4-dflash-draft." + key.replace(".", r"\.")):
        _engine.Drafter.load(str(path), model)


def test_a_drafter_that_does_not_fit_its_target(model):
    wide = _write_drafter("wide", _config(n_embd=32))
    with pytest.raises(_engine.FormatError, match="embedding_length.*n_embd"):
        _engine.Drafter.load(str(wide), model)
    # capture layers 2..4 of a 5-layer config, on a 3-layer target
    from ds4kit.synth import write_target
    short = tmp_dir() / "drafter-short-target.gguf"
    write_target(short, _config(n_layer=3, compress_ratios=(0, 4, 128), hash_layers=1), seed=3)
    d = _write_drafter("deep", _config())
    with pytest.raises(_engine.FormatError, match="capture_layer_ids.*names layer 3"):
        _engine.Drafter.load(str(d), _engine.Model(str(short), threads=1))
    with pytest.raises(_engine.FormatError, match="general.architecture"):
        _engine.Drafter.load(str(short), model)  # a target file is not a drafter


def test_the_python_facade(files):
    from ds4kit.engine import Drafter, Model
    m = Model.load(files[0], backend="cpu", threads=2)
    d = Drafter.load(files[1], m)
    assert d.block_size == 5 and d.capture_layers == [2, 3, 4] and d.max_context == 16
    s = m.session(64, fp8_kv=False, indexer_fp4=False, capture_layers=d.capture_layers)
    last = s.prefill([3, 1, 4, 1, 5, 9], mode="exact")
    out = d.propose(s.captured(), int(np.argmax(last)), 6)
    native = _engine.Drafter.load(str(files[1]), _engine.Model(str(files[0]), threads=2))
    assert np.array_equal(out["logits"], native.propose(s.captured(), int(np.argmax(last)), 6)["logits"])
    with pytest.raises(FileNotFoundError):
        Drafter.load(files[1].with_name("nope.gguf"), m)


def test_two_drafters_on_one_target(files):
    """Each drafter's views extend the target's table with overlapping ids; the one that
    computes rebinds its own first, so alternating them gives each its own results."""
    m = _engine.Model(str(files[0]), threads=2)
    other_path = tmp_dir() / "drafter-other.gguf"
    from ds4kit.synth import write_drafter
    write_drafter(other_path, _config(), seed=9)
    feats, tok, pos = _prompt_features(m, _engine.Drafter.load(str(files[1]), m), 12, 91)
    alone = {p: _engine.Drafter.load(str(p), _engine.Model(str(files[0]), threads=2)).propose(feats, tok, pos)
             for p in (files[1], other_path)}
    a, b = _engine.Drafter.load(str(files[1]), m), _engine.Drafter.load(str(other_path), m)
    for d, p in ((a, files[1]), (b, other_path), (a, files[1])):
        assert np.array_equal(d.propose(feats, tok, pos)["logits"], alone[p]["logits"])
    assert not np.array_equal(alone[files[1]]["logits"], alone[other_path]["logits"])


def test_quantised_drafter_matrices():
    """The dflash matrices (fc, markov w1/w2, confidence) as Q8_0, as the blocks' default mix is."""
    from ds4kit.synth import write_drafter, write_target
    cfg = _config(draft_markov_rank=32)
    t, d = tmp_dir() / "drafter-q8-target.gguf", tmp_dir() / "drafter-q8.gguf"
    write_target(t, cfg, seed=3)
    write_drafter(d, cfg, seed=3, types={"dflash": "Q8_0"})
    import gguf
    assert {x.tensor_type.name for x in gguf.GGUFReader(str(d)).tensors if x.name.startswith("dflash.dspark.markov")} \
        == {"Q8_0"}
    m = _engine.Model(str(t), threads=2)
    dr = _engine.Drafter.load(str(d), m)
    worst, conf = _compare((t, d), m, dr, 20, 101)
    assert worst <= TOL and conf <= TOL, (worst, conf)


def test_a_drafter_without_the_confidence_head(model, monkeypatch):
    from ds4kit.synth import build
    plan = build.drafter_tensors
    monkeypatch.setattr(build, "drafter_tensors",
                        lambda c: [x for x in plan(c) if not x.name.startswith("dflash.dspark.confidence")])
    path = tmp_dir() / "drafter-noconf.gguf"
    build.write_drafter(path, _config(), seed=3)
    d = _engine.Drafter.load(str(path), model)
    assert d.confidence_dim == 0
    feats, tok, pos = _prompt_features(model, d, 8, 111)
    out = d.propose(feats, tok, pos)
    assert out["confidence"] is None and out["logits"].shape == (5, VOCAB)


def test_keys_lucebox_does_not_need_are_optional(model, monkeypatch):
    """Lucebox forces the drafter's ratios and hash layers to 0 without reading them; a file
    without those keys loads here too (ratios 0, no hash layers)."""
    from ds4kit.synth import build
    for fn in ("u32", "array"):
        orig = getattr(build.G, fn)
        monkeypatch.setattr(build.G, fn, (lambda o: lambda k, *a: o(
            "ds4kit.test.dropped." + k if k.endswith(("compress_ratios", "hash_layer_count")) and "dflash-draft" in k
            else k, *a))(orig))
    path = tmp_dir() / "drafter-noratios.gguf"
    build.write_drafter(path, _config(), seed=3)
    import gguf
    keys = set(gguf.GGUFReader(str(path)).fields)
    assert "deepseek4-dflash-draft.attention.compress_ratios" not in keys
    assert "deepseek4-dflash-draft.hash_layer_count" not in keys
    d = _engine.Drafter.load(str(path), model)
    feats, tok, pos = _prompt_features(model, d, 8, 121)
    same = _engine.Drafter.load(str(_files("tiny")[1]), model)  # the same weights, with the keys
    assert np.array_equal(d.propose(feats, tok, pos)["logits"], same.propose(feats, tok, pos)["logits"])


def test_a_mask_token_outside_the_vocabulary(model):
    path = _write_drafter("mask", _config(draft_mask_token_id=VOCAB + 5))
    with pytest.raises(_engine.FormatError, match=r"dflash\.mask_token_id' is 1029, outside the vocabulary"):
        _engine.Drafter.load(str(path), model)
