"""Same seed -> byte-identical files; another seed -> different weights."""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGUFReader

from ds4kit.synth import qtypes, sha256_file, write_drafter, write_target
from ds4kit.synth.weights import tensor_rng

from conftest import BLOCK256


def test_same_seed_gives_identical_target_and_drafter(synth_tiny_files, tmp_path):
    again = write_target(tmp_path / "again.gguf", synth_tiny_files.cfg, seed=synth_tiny_files.seed)
    assert again.sha256 == synth_tiny_files.target.sha256
    assert sha256_file(synth_tiny_files.target.path) == synth_tiny_files.target.sha256  # reported hash is the file's
    d_again = write_drafter(tmp_path / "again-d.gguf", synth_tiny_files.cfg, seed=synth_tiny_files.seed)
    assert d_again.sha256 == synth_tiny_files.drafter.sha256


def test_parallel_writers_give_the_serial_bytes(synth_tiny_files, tmp_path):
    # --jobs forks workers that write each tensor at its offset: the file must not change
    par = write_target(tmp_path / "par.gguf", synth_tiny_files.cfg, seed=synth_tiny_files.seed, jobs=3)
    assert par.sha256 == synth_tiny_files.target.sha256
    d_par = write_drafter(tmp_path / "par-d.gguf", synth_tiny_files.cfg, seed=synth_tiny_files.seed, jobs=2)
    assert d_par.sha256 == synth_tiny_files.drafter.sha256


@pytest.mark.parametrize("type_name", qtypes.GGUF_QUANTISABLE)
def test_gaussian_tensor_in_slabs_is_the_one_draw_tensor(type_name, monkeypatch):
    # Oracle: the whole tensor drawn in one call and quantised by gguf-py at once (what synth did
    # before it drew large tensors slab by slab); slabs of 7 rows split 30 rows into 5, the last short.
    shape, std, qt = (64, 6, 5), 0.02, qtypes.BY_NAME[type_name]
    whole = tensor_rng(5, "blk.0.ffn_up_exps.weight").standard_normal(size=(5, 6, 64), dtype=np.float32)
    want = qtypes.encode_values(whole * np.float32(std), qt)
    monkeypatch.setattr(qtypes, "GAUSSIAN_SLAB_VALUES", 64 * 7)
    got = qtypes.encode_gaussian(tensor_rng(5, "blk.0.ffn_up_exps.weight"), shape, std, qt)
    assert got == want


def test_other_seed_gives_another_file(synth_tiny_files, tmp_path):
    other = write_target(tmp_path / "other.gguf", synth_tiny_files.cfg, seed=synth_tiny_files.seed + 1)
    assert other.sha256 != synth_tiny_files.target.sha256
    assert other.size_bytes == synth_tiny_files.target.size_bytes


def _tensors(path):
    # shape-only files (small vocab, no tokenizer): gguf-py reads them quickly
    return {t.name: np.asarray(t.data) for t in GGUFReader(path).tensors}


def test_other_seed_changes_every_random_tensor(tmp_path):
    a = _tensors(write_target(tmp_path / "a.gguf", BLOCK256, seed=11).path)
    b = _tensors(write_target(tmp_path / "b.gguf", BLOCK256, seed=12).path)
    assert a.keys() == b.keys()
    same = [n for n in a if np.array_equal(a[n], b[n])]
    assert same == [], f"tensors identical across seeds: {same}"


def test_tensor_contents_do_not_depend_on_other_groups_types(tmp_path):
    # each tensor has its own seed stream, so changing one group's type leaves the rest byte-identical
    a = _tensors(write_target(tmp_path / "a.gguf", BLOCK256, seed=3).path)
    b = _tensors(write_target(tmp_path / "b.gguf", BLOCK256, seed=3, types={"experts": "Q8_0"}).path)
    changed = sorted(n for n in a if a[n].shape != b[n].shape or not np.array_equal(a[n], b[n]))
    assert changed and all("_exps." in n for n in changed), changed


def test_drafter_blocks_do_not_copy_target_blocks(tmp_path):
    # the drafter has its own seed stream; equal names (blk.0.attn_q_a.weight) must not mean equal weights
    t = _tensors(write_target(tmp_path / "t.gguf", BLOCK256, seed=5).path)
    d = _tensors(write_drafter(tmp_path / "d.gguf", BLOCK256, seed=5).path)
    shared_names = [n for n in d if n in t and n.startswith("blk.") and "norm" not in n]
    assert shared_names
    assert not any(np.array_equal(t[n], d[n]) for n in shared_names)
