"""Mutation fuzzing of the GGUF reader inside the test suite.

N_CASES mutated files (bit flips, byte sets, truncations, splices, interesting
integers at count/length/offset fields) derived from five small real GGUFs, with
a fixed seed. Each is opened and fully walked (metadata, types, tensor views) in
a child process, so a segfault, abort or hang fails the test and is pinpointed
by case index: reproduce one with gguf_mutator.mutate(seeds, fields, index).
"""
from __future__ import annotations

import warnings

import pytest

from ds4kit import _engine
import gguf_mutator
from gguf_oracle import assert_matches_gguf_py
from gguf_fuzz_driver import run_fuzz

N_CASES = 12_000


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz_seeds")
    gguf_mutator.seed_files(folder)
    return folder


def test_mutation_fuzz_no_crash_hang_or_stray_exception(seed_dir, tmp_path):
    res = run_fuzz(seed_dir, tmp_path / "work", N_CASES)
    report = (f"cases={res.cases} accepted={res.accepted} rejected={res.rejected} crashes={res.crashes} "
              f"hangs={res.hangs} bad={res.bad_exceptions[:20]}")
    assert not res.crashes and not res.hangs and not res.bad_exceptions, report
    assert res.cases == N_CASES == res.accepted + res.rejected, report
    # Not vacuous: plenty of mutants still parse, and plenty are rejected.
    assert res.accepted > N_CASES // 20 and res.rejected > N_CASES // 2, report


def test_harness_pinpoints_crashes_and_hangs(seed_dir, tmp_path):
    """The restart logic itself: an injected abort and an injected hang are both found."""
    res = run_fuzz(seed_dir, tmp_path / "c", 60, env_extra={"DS4_FUZZ_SELFTEST_CRASH_AT": "17"})
    assert [i for i, _ in res.crashes] == [17] and res.cases == 60 and res.accepted + res.rejected == 59
    res = run_fuzz(seed_dir, tmp_path / "h", 40, hang_s=1.5, env_extra={"DS4_FUZZ_SELFTEST_HANG_AT": "25"})
    assert res.hangs == [25] and not res.crashes and res.cases == 40


N_DIFFERENTIAL = 3_000


def test_accepted_mutants_agree_with_gguf_py(seed_dir, tmp_path):
    """Differential check: every mutant we accept, gguf-py reads the same way.
    (We are stricter than gguf-py, so the converse is not expected.)"""
    seeds, fields = gguf_mutator.load_seeds(seed_dir)
    path = tmp_path / "m.gguf"
    accepted = 0
    for i in range(N_DIFFERENTIAL):
        path.write_bytes(gguf_mutator.mutate(seeds, fields, i))
        try:
            _engine.GGUFFile(str(path))
        except _engine.Ds4Error:
            continue
        accepted += 1
        try:
            assert_matches_gguf_py(path)
        except Exception as e:  # noqa: BLE001 - report the reproducing index
            raise AssertionError(f"mutant {i}: {type(e).__name__}: {e}") from e
    assert accepted > N_DIFFERENTIAL // 20
