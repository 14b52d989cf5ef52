"""Every per-group type round-trips: read back with gguf-py (or, for ROCmFP, a raw parser),
dequantise, and check shape, type and magnitude against what was planned."""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGUFReader, quants
from gguf.constants import GGMLQuantizationType as GQT

from ds4kit.synth import GROUPS, write_drafter, write_target
from ds4kit.synth import rocmfp
from ds4kit.synth.layout import drafter_tensors, target_tensors
from ds4kit.synth.qtypes import BY_NAME, ROCM_TYPES, WEIGHT_TYPES

from conftest import BLOCK256
from synth_gguf_raw import read_raw


def _check_magnitudes(plan, decoded: dict[str, np.ndarray], type_name: str) -> None:
    for t in plan:
        w = decoded[t.name].astype(np.float64)
        assert np.isfinite(w).all(), t.name
        if t.init != "gauss" or w.size < 2048:
            continue
        rms, mean = np.sqrt(np.mean(w ** 2)), np.mean(w)
        # random-block types scale per block (+-20% jitter); quantisation noise adds a little
        assert 0.8 * t.std < rms < 1.25 * t.std, f"{t.name} as {type_name}: rms {rms:.4g}, planned {t.std:.4g}"
        assert abs(mean) < 0.05 * t.std, f"{t.name} as {type_name}: mean {mean:.3g} not ~0"


def _check_fixed(plan, decoded, cfg) -> None:
    for t in plan:
        w = decoded[t.name]
        if t.init == "norm":
            assert abs(float(np.mean(w)) - 1.0) < 0.05, t.name
        if t.init == "tid2eid":
            ids = w.reshape(cfg.vocab_size, cfg.n_expert_used)
            assert ids.min() >= 0 and ids.max() < cfg.n_expert, t.name
            assert all(len(set(row)) == cfg.n_expert_used for row in ids.tolist()), f"{t.name}: repeated expert"


def _expected_type(t, type_name):
    return type_name if t.group else t.fixed_type


@pytest.mark.parametrize("type_name", [t for t in WEIGHT_TYPES if t not in ROCM_TYPES])
def test_standard_type_round_trips_through_gguf_py(type_name, tmp_path):
    types = {g: type_name for g in GROUPS}
    for plan, write in ((target_tensors(BLOCK256), write_target), (drafter_tensors(BLOCK256), write_drafter)):
        path = tmp_path / f"{write.__name__}.gguf"
        write(path, BLOCK256, seed=7, types=types)
        reader = GGUFReader(path)
        got = {t.name: t for t in reader.tensors}
        assert set(got) == {t.name for t in plan}
        decoded = {}
        for t in plan:
            rt = got[t.name]
            assert rt.tensor_type.name == _expected_type(t, type_name), t.name
            assert tuple(int(x) for x in rt.shape) == t.shape, t.name  # gguf-py reports ggml ne order
            if rt.tensor_type == GQT.I32:
                decoded[t.name] = np.asarray(rt.data)
            else:
                decoded[t.name] = quants.dequantize(np.asarray(rt.data), rt.tensor_type).reshape(tuple(reversed(t.shape)))
        _check_magnitudes(plan, decoded, type_name)
        _check_fixed(plan, decoded, BLOCK256)


@pytest.mark.parametrize("type_name", ROCM_TYPES)
def test_rocmfp_type_round_trips(type_name, tmp_path):
    qt = BY_NAME[type_name]
    types = {g: type_name for g in GROUPS}
    plan = target_tensors(BLOCK256)
    path = tmp_path / "rocm.gguf"
    written = write_target(path, BLOCK256, seed=7, types=types)
    assert any("ROCmFP" in w for w in written.warnings)  # says llama.cpp cannot load it
    kv, tensors, buf = read_raw(path)
    assert kv["general.architecture"] == "deepseek4"
    by_name = {t.name: t for t in tensors}
    decoded = {}
    for t in plan:
        rt = by_name[t.name]
        assert rt.shape == t.shape and rt.type_id == (qt.type_id if t.group else BY_NAME[t.fixed_type].type_id)
        n = int(np.prod(t.shape))
        if t.group:
            raw = np.frombuffer(buf, np.uint8, n // 32 * qt.block_bytes, rt.offset)
            decoded[t.name] = rocmfp.dequantize(raw, qt.type_id)
            # the generator never writes the code whose meaning the sources dispute (FP6 "-0")
            if qt.type_id == 102:
                blocks = raw.reshape(-1, qt.block_bytes)
                assert not np.any(rocmfp._unpack_codes(blocks, rocmfp.LAYOUTS[102]) == 32)
        else:
            dt = "<i4" if t.fixed_type == "I32" else "<f4"
            decoded[t.name] = np.frombuffer(buf, dt, n, rt.offset)
    _check_magnitudes(plan, decoded, type_name)
    _check_fixed(plan, decoded, BLOCK256)


def test_type_that_does_not_fit_a_row_names_the_tensor(tmp_path, synth_tiny_files):
    with pytest.raises(ValueError, match=r"blk\.0\.ffn_gate_exps\.weight.*Q4_K.*256"):
        write_target(tmp_path / "bad.gguf", synth_tiny_files.cfg, types={"experts": "Q4_K"})
    assert not (tmp_path / "bad.gguf").exists()


def test_unknown_type_and_group_are_rejected():
    from ds4kit.synth import resolve_types
    with pytest.raises(ValueError, match="unknown weight type 'Q5_K'"):
        resolve_types({"experts": "Q5_K"})
    with pytest.raises(ValueError, match="unknown tensor group 'mlp'"):
        resolve_types({"mlp": "F16"})
    assert resolve_types({"experts": "107"})["experts"] == "Q2_0_ROCMFP2"
