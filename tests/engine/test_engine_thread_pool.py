"""The CPU backend's thread pool under stress (engine/src/backend/cpu/thread_pool.cpp).

Chunks are claimed dynamically, so every round checks that each index of [0, n) is
visited exactly once, in chunks that match the pool's fixed split (a pure function of
n, min_chunk and the thread count), and that an exception thrown by any chunk reaches
the caller. Some rounds pause long enough for the workers to fall asleep.
"""
from __future__ import annotations

import pytest

from ds4kit import _engine


@pytest.mark.parametrize("threads", [1, 2, 3, 8, 17])
def test_pool_visits_every_index_once_and_propagates_exceptions(threads):
    rounds = 10000
    r = _engine._pool_selftest(threads, rounds, 1, 7 + threads)
    assert r["failures"] == 0, r["first_failure"]
    assert r["rounds"] == rounds
    assert r["throws"] > 100 and r["caught"] == r["throws"]
    if threads > 1:
        assert r["worker_chunks"] > 0  # workers did take chunks


@pytest.mark.parametrize("threads", [2, 5])
def test_pool_shared_by_concurrent_callers(threads):
    # Two sessions of one model may call the same backend from two Python threads.
    r = _engine._pool_selftest(threads, 1500, 3, 99)
    assert r["failures"] == 0, r["first_failure"]
    assert r["rounds"] == 3 * 1500
    assert r["caught"] == r["throws"]
