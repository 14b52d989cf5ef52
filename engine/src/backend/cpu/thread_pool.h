// A fork-join thread pool: parallel_for splits [0, n) into contiguous chunks and
// returns when all are done. The split is a pure function of (n, min_chunk,
// size()); which thread runs which chunk is not fixed (chunks are claimed
// dynamically), so callers split work over independent outputs only and results
// never depend on the thread count or the schedule.
// Not reentrant: a chunk must not call parallel_for on the same pool.
//
// Hand-off: one 64-bit atomic word packs (generation, n_chunks, next_chunk).
// A call publishes a new generation; every thread that wants work (the caller
// included) claims the next chunk by CAS on that word. A call with k chunks thus
// involves at most k threads, the others keep spinning or sleeping undisturbed,
// and the caller waits only for the k chunks (a done-chunk counter), never for
// idle workers to check in. Waiting is spin-then-sleep: a decoded token runs
// hundreds of small parallel_fors, so back-to-back calls never sleep, while an
// idle pool (between requests) sleeps after kSpin and frees the CPU.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <type_traits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ds4 {

// A non-owning reference to a callable fn(begin, end). Unlike std::function it
// never allocates, whatever the lambda captures: parallel_for runs hundreds of
// times per token. The callable must outlive the call (a lambda argument does).
class ChunkFn {
public:
    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, ChunkFn>>>
    ChunkFn(F&& f)  // NOLINT: implicit, so lambdas pass straight to parallel_for
        : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
          call_([](void* o, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(o))(b, e); }) {}
    void operator()(int64_t b, int64_t e) const { call_(obj_, b, e); }

private:
    void* obj_;
    void (*call_)(void*, int64_t, int64_t);
};

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);  // <= 0: hardware concurrency
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }
    // fn(begin, end) over chunks of [0, n); chunks smaller than min_chunk are not split further.
    // The first exception thrown by any chunk is rethrown here (the other chunks still run).
    void parallel_for(int64_t n, int64_t min_chunk, ChunkFn fn);

    // The split parallel_for uses: n_chunks chunks of `chunk` elements (the last may be
    // shorter), a pure function of its arguments. Up to kChunksPerThread chunks per
    // thread (load balance), never smaller than min_chunk, at most kMaxChunks.
    static void split(int64_t n, int64_t min_chunk, int n_threads, int64_t* chunk, int64_t* n_chunks);

    static constexpr std::chrono::microseconds kSpin{200};
    static constexpr int64_t kChunksPerThread = 4;
    static constexpr int64_t kMaxChunks = 0xFFFF;

private:
    void worker();
    // Claims and runs chunks of the job published in `s` until none is left; returns how many it ran.
    int64_t run_chunks(uint64_t s);

    int n_threads_ = 1;
    std::vector<std::thread> workers_;
    std::mutex run_mu_;  // one parallel_for at a time
    // state_: generation (bits 32..63) | n_chunks (16..31) | next_chunk (0..15).
    std::atomic<uint64_t> state_{0};
    // Job fields of the current generation (see the ordering comment in thread_pool.cpp).
    std::atomic<const ChunkFn*> job_fn_{nullptr};
    std::atomic<int64_t> job_n_{0}, job_chunk_{0};
    std::atomic<int64_t> done_{0};  // chunks of the current generation finished
    // Sleeping: workers block on start_cv_, the caller on done_cv_ (both under mu_).
    std::mutex mu_;
    std::condition_variable start_cv_, done_cv_;
    std::atomic<int> sleepers_{0};
    std::atomic<bool> caller_sleeping_{false};
    std::atomic<bool> stop_{false};
    std::exception_ptr error_;  // guarded by mu_
};

}  // namespace ds4
