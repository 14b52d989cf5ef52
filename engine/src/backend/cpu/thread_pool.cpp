#include "backend/cpu/thread_pool.h"

#include <algorithm>

namespace ds4 {

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
    n_threads_ = n_threads;
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back(&ThreadPool::worker, this, i);
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    start_cv_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        const std::function<void(int64_t, int64_t)>* job;
        int64_t n, chunk;
        {
            std::unique_lock<std::mutex> lk(mu_);
            start_cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            if (index >= n_chunks_) continue;  // nothing for this thread in this round
            job = job_;
            n = job_n_;
            chunk = job_chunk_;
        }
        try {
            const int64_t b = index * chunk, e = std::min(n, b + chunk);
            if (b < e) (*job)(b, e);
        } catch (...) {
            std::lock_guard<std::mutex> lk(mu_);
            if (!error_) error_ = std::current_exception();
        }
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (--pending_ == 0) done_cv_.notify_all();
        }
    }
}

void ThreadPool::parallel_for(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    min_chunk = std::max<int64_t>(1, min_chunk);
    const int64_t max_chunks = (n + min_chunk - 1) / min_chunk;
    const int n_chunks = (int)std::min<int64_t>(n_threads_, max_chunks);
    if (n_chunks <= 1) {
        fn(0, n);
        return;
    }
    std::lock_guard<std::mutex> run(run_mu_);
    const int64_t chunk = (n + n_chunks - 1) / n_chunks;
    {
        std::lock_guard<std::mutex> lk(mu_);
        job_ = &fn;
        job_n_ = n;
        job_chunk_ = chunk;
        n_chunks_ = n_chunks;
        pending_ = n_chunks - 1;
        error_ = nullptr;
        ++generation_;
    }
    start_cv_.notify_all();
    std::exception_ptr mine;
    try {
        fn(0, std::min(n, chunk));  // chunk 0 runs on the calling thread
    } catch (...) {
        mine = std::current_exception();
    }
    std::exception_ptr theirs;
    {
        std::unique_lock<std::mutex> lk(mu_);
        done_cv_.wait(lk, [&] { return pending_ == 0; });
        theirs = error_;
        job_ = nullptr;
    }
    if (mine) std::rethrow_exception(mine);
    if (theirs) std::rethrow_exception(theirs);
}

}  // namespace ds4
