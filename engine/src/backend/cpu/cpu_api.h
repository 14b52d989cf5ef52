// What the CPU backend offers outside itself: its factory (backend_registry.cpp
// makes backends by name) and the thread pool's self-test (a development binding).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"

namespace ds4 {

// threads <= 0 means the hardware concurrency.
std::unique_ptr<Backend> make_cpu_backend(int threads);

// Stress test of the pool (bound as _engine._pool_selftest): `callers` threads each run
// `rounds` parallel_fors of varied n and min_chunk on one pool of `threads` threads,
// checking that every index of [0, n) is visited exactly once in chunks that match
// ThreadPool::split; in some rounds a chunk throws and the exception must reach the
// caller; some rounds pause past kSpin so the workers fall asleep. failures == 0 and
// an empty first_failure mean it passed.
struct PoolSelftestResult {
    int64_t rounds = 0, chunks = 0, worker_chunks = 0, indices = 0, throws = 0, caught = 0, failures = 0;
    std::string first_failure;
};
PoolSelftestResult thread_pool_selftest(int threads, int64_t rounds, int callers, uint64_t seed);

}  // namespace ds4
