// A minimal fork-join thread pool: parallel_for splits [0, n) into one
// contiguous chunk per thread and returns when all are done. Callers split work
// over independent outputs only, so results never depend on the thread count.
// Not reentrant: a chunk must not call parallel_for on the same pool.
//
// Hand-off is spin-then-sleep: a decoded token runs hundreds of small
// parallel_fors, and a condition-variable wake-up per call (tens of
// microseconds each) cost more than the work. Waiting threads spin on atomics
// for up to kSpin before blocking, so back-to-back calls never sleep, while an
// idle pool (between requests) still sleeps and frees the CPU.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ds4 {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);  // <= 0: hardware concurrency
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }
    // fn(begin, end) over chunks of [0, n); chunks smaller than min_chunk are not split further.
    // The first exception thrown by any chunk is rethrown here.
    void parallel_for(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

    static constexpr std::chrono::microseconds kSpin{200};

private:
    void worker(int index);

    int n_threads_ = 1;
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::mutex run_mu_;  // one parallel_for at a time
    std::condition_variable start_cv_, done_cv_;
    // Job fields: written before generation_ is bumped (release), read after it is seen (acquire).
    const std::function<void(int64_t, int64_t)>* job_ = nullptr;
    int64_t job_n_ = 0, job_chunk_ = 0;
    int n_chunks_ = 0;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> pending_{0};
    int sleepers_ = 0;            // workers blocked on start_cv_ (guarded by mu_)
    bool caller_sleeping_ = false;  // parallel_for blocked on done_cv_ (guarded by mu_)
    std::atomic<bool> stop_{false};
    std::exception_ptr error_;      // guarded by mu_
};

}  // namespace ds4
