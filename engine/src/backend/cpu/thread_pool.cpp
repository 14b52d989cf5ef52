#include "backend/cpu/thread_pool.h"

#include <algorithm>

namespace ds4 {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpin has passed; returns done().
template <class Pred>
bool spin_until(Pred done) {
    const auto until = std::chrono::steady_clock::now() + ThreadPool::kSpin;
    for (;;) {
        for (int i = 0; i < 64; ++i) {
            if (done()) return true;
            cpu_relax();
        }
        if (std::chrono::steady_clock::now() >= until) return done();
    }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
    n_threads_ = n_threads;
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back(&ThreadPool::worker, this, i);
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_.store(true);
    }
    start_cv_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        auto started = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
        if (!spin_until(started)) {
            std::unique_lock<std::mutex> lk(mu_);
            ++sleepers_;
            start_cv_.wait(lk, started);
            --sleepers_;
        }
        if (stop_.load()) return;
        seen = generation_.load(std::memory_order_acquire);
        try {
            // index >= n_chunks_: nothing for this thread in this round, but it still
            // reports, so the next round cannot rewrite the job fields under it.
            const int64_t b = index * job_chunk_, e = std::min(job_n_, b + job_chunk_);
            if (index < n_chunks_ && b < e) (*job_)(b, e);
        } catch (...) {
            std::lock_guard<std::mutex> lk(mu_);
            if (!error_) error_ = std::current_exception();
        }
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lk(mu_);
            if (caller_sleeping_) done_cv_.notify_all();
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
    // pending_ counts every worker, chunk or not: none may still be reading this
    // round's job fields when the next round writes them.
    bool wake;
    {
        std::lock_guard<std::mutex> lk(mu_);
        job_ = &fn;
        job_n_ = n;
        job_chunk_ = chunk;
        n_chunks_ = n_chunks;
        error_ = nullptr;
        pending_.store(n_threads_ - 1, std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
        wake = sleepers_ > 0;
    }
    if (wake) start_cv_.notify_all();
    std::exception_ptr mine;
    try {
        fn(0, std::min(n, chunk));  // chunk 0 runs on the calling thread
    } catch (...) {
        mine = std::current_exception();
    }
    auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
    std::exception_ptr theirs;
    if (!spin_until(done)) {
        std::unique_lock<std::mutex> lk(mu_);
        caller_sleeping_ = true;
        done_cv_.wait(lk, done);
        caller_sleeping_ = false;
    }
    {
        std::lock_guard<std::mutex> lk(mu_);
        theirs = error_;
        job_ = nullptr;
    }
    if (mine) std::rethrow_exception(mine);
    if (theirs) std::rethrow_exception(theirs);
}

}  // namespace ds4
