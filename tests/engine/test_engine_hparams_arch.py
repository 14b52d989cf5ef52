"""The hyperparameter reader is parameterised by architecture: the target (`deepseek4`) and
the DSpark drafter (`deepseek4-dflash-draft`, ds4-model.md section 6) share the model keys
under their own prefix. Checked on ds4kit.synth's target and drafter files against the
values gguf-py reads (an independent parser)."""
import pytest
from gguf import GGUFReader

from engine_fixtures import tmp_dir

from ds4kit import _engine
from ds4kit.synth import preset, write_drafter, write_target


@pytest.fixture(scope="module")
def files():
    cfg = preset("tiny")
    target, drafter = tmp_dir() / "arch-target.gguf", tmp_dir() / "arch-drafter.gguf"
    write_target(target, cfg, seed=0)
    write_drafter(drafter, cfg, seed=0)
    return target, drafter


def _gguf_py(path, key):
    f = GGUFReader(path).fields[key]
    return [int(f.parts[i][0]) for i in f.data] if len(f.data) > 1 else f.parts[f.data[0]].tolist()[0]


@pytest.mark.parametrize("which, arch", [(0, "deepseek4"), (1, "deepseek4-dflash-draft")])
def test_each_architecture_reads_its_own_keys(files, which, arch):
    path = files[which]
    hp = _engine.read_hparams(_engine.GGUFFile(str(path)), arch)
    assert hp["n_layer"] == _gguf_py(path, arch + ".block_count")
    assert hp["n_embd"] == _gguf_py(path, arch + ".embedding_length")
    assert hp["n_head"] == _gguf_py(path, arch + ".attention.head_count")
    assert hp["n_swa"] == _gguf_py(path, arch + ".attention.sliding_window")
    ratios = _gguf_py(path, arch + ".attention.compress_ratios")
    assert hp["compress_ratios"] == (ratios if isinstance(ratios, list) else [ratios] * hp["n_layer"])


def test_drafter_has_no_compressed_layers_and_needs_no_indexer_keys(files):
    hp = _engine.read_hparams(_engine.GGUFFile(str(files[1])), "deepseek4-dflash-draft")
    assert hp["n_layer"] == 3 and set(hp["compress_ratios"]) == {0}
    assert hp["n_hash_layers"] == 0


def test_the_wrong_architecture_is_refused_by_name(files):
    target, drafter = (_engine.GGUFFile(str(p)) for p in files)
    with pytest.raises(_engine.FormatError, match="'deepseek4-dflash-draft', expected 'deepseek4'"):
        _engine.read_hparams(drafter)  # the target reader is the default
    with pytest.raises(_engine.FormatError, match="expected 'deepseek4-dflash-draft'"):
        _engine.read_hparams(target, "deepseek4-dflash-draft")
    with pytest.raises(_engine.FormatError, match="general.architecture"):
        _engine.Model(str(files[1]))  # a drafter is not a target model
