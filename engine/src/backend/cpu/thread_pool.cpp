#include "backend/cpu/thread_pool.h"
#include "backend/cpu/cpu_api.h"

#include <algorithm>

// Memory ordering (why no thread ever runs a chunk with another call's job fields):
//  - The caller writes the job fields (relaxed atomics) and resets done_, then
//    publishes state_ = (gen, n_chunks, next 0) with a seq_cst (hence release) store.
//  - A thread claims chunk i by a CAS state_: (gen, n_chunks, i) -> (gen, n_chunks, i + 1)
//    (acq_rel), and reads the job fields only after the CAS succeeds. The CAS reads
//    from the publishing store or from a later claim of the same generation (RMWs
//    continue its release sequence), so it synchronises with the publication: the
//    fields it reads are at least this generation's.
//  - The next call cannot rewrite the fields before every chunk of this generation
//    is done: a thread adds the chunks it ran to done_ (release) after running
//    them, and the caller waits until done_ == n_chunks (acquire) before returning.
//    So the claimer's field reads happen before any later write: the fields it
//    reads are exactly this generation's. The same edge makes every chunk's
//    output writes (and error_) visible to the caller when parallel_for returns.
//  - A CAS on a stale word cannot succeed: state_ changes with every claim and
//    every publication. (The generation is 32 bits: a stale word could only
//    match again after 2^32 calls while one thread sits between its load and its
//    CAS.) A thread that has run chunks of generation g keeps claiming only in g:
//    g cannot end while its chunks are unreported.
//  - Sleep/wake uses the Dekker pattern with seq_cst on both sides: a worker
//    increments sleepers_ then re-checks state_ under mu_; the caller stores
//    state_ then reads sleepers_ and, if any, notifies under mu_. Either the
//    worker sees the job or the caller sees the sleeper. The same holds for the
//    caller sleeping on done_ (caller_sleeping_ / done_).

namespace ds4 {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Spins until done() or ThreadPool::kSpin has passed; returns done().
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

constexpr uint64_t kField = 0xFFFF;
inline uint64_t next_of(uint64_t s) { return s & kField; }
inline uint64_t chunks_of(uint64_t s) { return (s >> 16) & kField; }
inline bool claimable(uint64_t s) { return next_of(s) < chunks_of(s); }

}  // namespace

void ThreadPool::split(int64_t n, int64_t min_chunk, int n_threads, int64_t* chunk, int64_t* n_chunks) {
    min_chunk = std::max<int64_t>(1, min_chunk);
    if (n <= 0) {
        *chunk = 0;
        *n_chunks = 0;
        return;
    }
    const int64_t max_chunks = (n + min_chunk - 1) / min_chunk;
    const int64_t target = n_threads <= 1 ? 1 : std::min<int64_t>(kMaxChunks, (int64_t)n_threads * kChunksPerThread);
    const int64_t nc = std::min(max_chunks, target);
    *chunk = (n + nc - 1) / nc;
    *n_chunks = (n + *chunk - 1) / *chunk;
}

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
    n_threads_ = n_threads;
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back(&ThreadPool::worker, this);
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_.store(true);
    }
    start_cv_.notify_all();
    for (auto& t : workers_) t.join();
}

int64_t ThreadPool::run_chunks(uint64_t s) {
    int64_t ran = 0;
    while (claimable(s)) {
        // On failure s is reloaded (acquire) and the loop re-checks it.
        if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
        const int64_t i = (int64_t)next_of(s);
        const auto* fn = job_fn_.load(std::memory_order_relaxed);
        const int64_t n = job_n_.load(std::memory_order_relaxed), chunk = job_chunk_.load(std::memory_order_relaxed);
        const int64_t b = i * chunk, e = std::min(n, b + chunk);
        try {
            (*fn)(b, e);
        } catch (...) {
            std::lock_guard<std::mutex> lk(mu_);
            if (!error_) error_ = std::current_exception();
        }
        ++ran;
        s = state_.load(std::memory_order_acquire);
    }
    if (ran > 0) {
        done_.fetch_add(ran, std::memory_order_seq_cst);
        if (caller_sleeping_.load(std::memory_order_seq_cst)) {
            std::lock_guard<std::mutex> lk(mu_);
            done_cv_.notify_all();
        }
    }
    return ran;
}

void ThreadPool::worker() {
    for (;;) {
        uint64_t s = 0;
        auto ready = [&] {
            s = state_.load(std::memory_order_seq_cst);
            return claimable(s) || stop_.load(std::memory_order_acquire);
        };
        if (!spin_until(ready)) {
            std::unique_lock<std::mutex> lk(mu_);
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            start_cv_.wait(lk, ready);
            sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
        if (stop_.load(std::memory_order_acquire)) return;
        run_chunks(s);
    }
}

void ThreadPool::parallel_for(int64_t n, int64_t min_chunk, ChunkFn fn) {
    if (n <= 0) return;
    int64_t chunk = 0, n_chunks = 0;
    split(n, min_chunk, n_threads_, &chunk, &n_chunks);
    if (n_chunks <= 1) {
        fn(0, n);
        return;
    }
    std::lock_guard<std::mutex> run(run_mu_);
    // No thread touches the job fields, done_ or error_ now: the previous call
    // returned only after all of its chunks were done.
    error_ = nullptr;
    job_fn_.store(&fn, std::memory_order_relaxed);
    job_n_.store(n, std::memory_order_relaxed);
    job_chunk_.store(chunk, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint64_t gen = (state_.load(std::memory_order_relaxed) >> 32) + 1;
    state_.store((gen << 32) | ((uint64_t)n_chunks << 16), std::memory_order_seq_cst);
    // Wake sleepers only for chunks the caller will not take itself.
    const int sleepers = sleepers_.load(std::memory_order_seq_cst);
    if (sleepers > 0) {
        std::lock_guard<std::mutex> lk(mu_);
        if (n_chunks - 1 >= sleepers) {
            start_cv_.notify_all();
        } else {
            for (int64_t i = 0; i < n_chunks - 1; ++i) start_cv_.notify_one();
        }
    }
    run_chunks(state_.load(std::memory_order_acquire));
    auto done = [&] { return done_.load(std::memory_order_seq_cst) == n_chunks; };
    if (!spin_until(done)) {
        std::unique_lock<std::mutex> lk(mu_);
        caller_sleeping_.store(true, std::memory_order_seq_cst);
        done_cv_.wait(lk, done);
        caller_sleeping_.store(false, std::memory_order_relaxed);
    }
    if (error_) {
        std::exception_ptr e = error_;
        error_ = nullptr;
        std::rethrow_exception(e);
    }
}

}  // namespace ds4

// ---------------------------------------------------------------------------
// Self-test (see thread_pool.h).

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace ds4 {

namespace {

struct SelftestError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void selftest_caller(ThreadPool& pool, int64_t rounds, uint64_t seed, PoolSelftestResult& r) {
    const std::thread::id me = std::this_thread::get_id();
    std::vector<std::atomic<int>> visits(20000);
    auto fail = [&](const std::string& what) {
        if (r.failures++ == 0) r.first_failure = what;
    };
    uint64_t rng = seed;
    for (int64_t round = 0; round < rounds; ++round) {
        const uint64_t a = splitmix(rng), b = splitmix(rng);
        // Mostly small n (the engine's common case), some large; min_chunk 0..64 with 0 and 1 common.
        int64_t n = (a % 4 == 0) ? (int64_t)(b % 20000) : (int64_t)(b % 64);
        const int64_t min_chunk = (int64_t)((a >> 8) % 5 == 0 ? 0 : (a >> 16) % 65);
        const bool do_throw = (a >> 24) % 7 == 0 && n > 0;
        const int64_t throw_at = n > 0 ? (int64_t)((a >> 32) % (uint64_t)n) : -1;
        const bool slow = (a >> 40) % 13 == 0;  // uneven chunk costs
        if ((a >> 48) % 211 == 0) std::this_thread::sleep_for(ThreadPool::kSpin * 3);  // let workers sleep
        int64_t chunk = 0, n_chunks = 0;
        ThreadPool::split(n, min_chunk, pool.size(), &chunk, &n_chunks);
        for (int64_t i = 0; i < n; ++i) visits[(size_t)i].store(0, std::memory_order_relaxed);
        std::atomic<int64_t> chunks{0}, worker_chunks{0}, bad{0};
        bool caught = false;
        try {
            pool.parallel_for(n, min_chunk, [&](int64_t cb, int64_t ce) {
                chunks.fetch_add(1, std::memory_order_relaxed);
                if (std::this_thread::get_id() != me) worker_chunks.fetch_add(1, std::memory_order_relaxed);
                // The chunk must be one of split()'s: [i*chunk, min(n, (i+1)*chunk)).
                if (cb < 0 || ce > n || cb >= ce || cb % chunk != 0 || ce != std::min(n, cb + chunk)) {
                    bad.fetch_add(1, std::memory_order_relaxed);
                    return;
                }
                for (int64_t i = cb; i < ce; ++i) visits[(size_t)i].fetch_add(1, std::memory_order_relaxed);
                if (slow && (cb / chunk) % 3 == 0) {
                    volatile uint64_t sink = 0;
                    for (int k = 0; k < 2000; ++k) sink = sink + (uint64_t)k;
                }
                if (do_throw && throw_at >= cb && throw_at < ce) throw SelftestError("round " + std::to_string(round));
            });
        } catch (const SelftestError& e) {
            caught = true;
            if (std::string(e.what()) != "round " + std::to_string(round)) fail("round " + std::to_string(round) + ": wrong exception '" + e.what() + "'");
        }
        r.rounds++;
        r.chunks += chunks.load();
        r.worker_chunks += worker_chunks.load();
        r.indices += n;
        if (do_throw) r.throws++;
        if (caught) r.caught++;
        if (caught != do_throw) fail("round " + std::to_string(round) + ": exception thrown " + std::to_string(do_throw) + " caught " + std::to_string(caught));
        if (bad.load() != 0) fail("round " + std::to_string(round) + ": a chunk outside the split");
        if (n > 0 && chunks.load() != n_chunks) {
            fail("round " + std::to_string(round) + ": " + std::to_string(chunks.load()) + " chunks, split says " + std::to_string(n_chunks));
        }
        for (int64_t i = 0; i < n; ++i) {
            const int v = visits[(size_t)i].load(std::memory_order_relaxed);
            if (v != 1) {
                fail("round " + std::to_string(round) + " n=" + std::to_string(n) + " min_chunk=" + std::to_string(min_chunk) +
                     ": index " + std::to_string(i) + " visited " + std::to_string(v) + " times");
                break;
            }
        }
    }
}

}  // namespace

PoolSelftestResult thread_pool_selftest(int threads, int64_t rounds, int callers, uint64_t seed) {
    ThreadPool pool(threads);
    callers = std::max(1, callers);
    std::vector<PoolSelftestResult> res((size_t)callers);
    std::vector<std::thread> ts;
    for (int c = 1; c < callers; ++c) {
        ts.emplace_back([&, c] { selftest_caller(pool, rounds, seed + 1000003ull * (uint64_t)c, res[(size_t)c]); });
    }
    selftest_caller(pool, rounds, seed, res[0]);
    for (auto& t : ts) t.join();
    PoolSelftestResult total;
    for (const auto& r : res) {
        total.rounds += r.rounds;
        total.chunks += r.chunks;
        total.worker_chunks += r.worker_chunks;
        total.indices += r.indices;
        total.throws += r.throws;
        total.caught += r.caught;
        if (r.failures && total.first_failure.empty()) total.first_failure = r.first_failure;
        total.failures += r.failures;
    }
    return total;
}

}  // namespace ds4
