// The plan of the experts' grouped walk (gpu_moe.cu's step 1) as a block's work, shared by its
// own kernel (gpu_moe.cu) and the kernel that quantises h beside it (gpu_moe_int8.cu).
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"

namespace ds4 {
namespace gpu {

constexpr int kPlanMaxExperts = 2048;  // experts the plan kernel counts in shared memory
constexpr int kPlanMaxPairs = 2048;    // (token, slot) pairs it copies to shared memory (more: read in place)
constexpr int kPlanThreads = 256;

// Experts and pairs the plan in h's quantiser launch holds (gpu_moe_int8.cu): its shared memory
// is every block's, and 33 KB of it on the quantiser's blocks had made that launch slower than
// the two it replaced in verify and prefill (run 25, H100).
constexpr int kPlanSmallExperts = 256;
constexpr int kPlanSmallPairs = 256;

// By one block (kPlanThreads threads; counts and starts in shared memory of MX experts, NX <= MX;
// the pairs' ids pass through shared memory MP at a time).
// Fault 3: an expert id outside 0..NX-1 (then no routed expert contributes). Expert e's count is
// counted by the threads that own e (no atomics), tile after tile of ids staged in shared memory
// (all loads at once; the owners then read each id from shared memory: a 2048-token prefill
// block's 12288 pairs read in place from global memory had taken 1.7 ms a layer on an H100);
// starts and the chosen list are two Hillis-Steele scans over the experts; the owners then place
// their experts' pairs in pair order, tile after tile again.
template <int MX, int MP>
__device__ inline void moe_plan_block(const int32_t* experts, int64_t n_pairs, int64_t NX, int32_t* count,
                                      int32_t* start, int32_t* col_of, int32_t* tok_of, int32_t* active,
                                      int32_t* n_active, int64_t K, int* fault) {
    static_assert(MX % kPlanThreads == 0, "whole experts a thread");
    __shared__ int32_t cnt[MX], cols[MX], chosen[MX];
    __shared__ int32_t pair_ids[MP];
    __shared__ int bad;
    const int t = (int)ds4_thread_x(), T = (int)ds4_block_dim_x();
    // Ids j0 .. j0 + MP (at most) into pair_ids, unless they are there already (one tile: the
    // placement reuses the count's); every thread calls it (barriers).
    int64_t held = -1;  // the first pair of the tile pair_ids holds (the same in every thread)
    auto stage = [&](int64_t j0) {
        const int64_t m = n_pairs - j0 < MP ? n_pairs - j0 : MP;
        if (held == j0) return m;
        ds4_sync_block();  // the tile before is read
        for (int64_t j = t; j < m; j += T) pair_ids[j] = experts[j0 + j];
        ds4_sync_block();
        held = j0;
        return m;
    };
    if (t == 0) bad = 0;
    for (int64_t e = t; e < NX; e += T) cnt[e] = 0;
    for (int64_t j0 = 0; j0 < n_pairs; j0 += MP) {
        const int64_t m = stage(j0);
        for (int64_t e = t; e < NX; e += T) {
            int32_t c = 0;
            for (int64_t j = 0; j < m; ++j) c += pair_ids[j] == e ? 1 : 0;
            cnt[e] += c;
        }
        for (int64_t j = t; j < m; j += T) {
            if (pair_ids[j] < 0 || pair_ids[j] >= NX) bad = 1;  // every writer writes 1
        }
    }
    ds4_sync_block();
    if (bad) {
        if (t == 0) {
            *fault = 3;
            *n_active = 0;
        }
        for (int64_t e = t; e < NX; e += T) count[e] = 0;
        for (int64_t j = t; j < n_pairs; j += T) col_of[j] = -1;
        return;
    }
    // Inclusive scans: cols[e] = sum of counts up to e, chosen[e] = experts with a count up to e.
    for (int64_t e = t; e < NX; e += T) {
        cols[e] = cnt[e];
        chosen[e] = cnt[e] ? 1 : 0;
    }
    ds4_sync_block();
    for (int64_t off = 1; off < NX; off *= 2) {
        int32_t a[MX / kPlanThreads], b[MX / kPlanThreads];
        int q = 0;
        for (int64_t e = t; e < NX; e += T, ++q) {
            a[q] = e >= off ? cols[e - off] : 0;
            b[q] = e >= off ? chosen[e - off] : 0;
        }
        ds4_sync_block();
        q = 0;
        for (int64_t e = t; e < NX; e += T, ++q) {
            cols[e] += a[q];
            chosen[e] += b[q];
        }
        ds4_sync_block();
    }
    for (int64_t e = t; e < NX; e += T) {
        const int32_t first = cols[e] - cnt[e];
        count[e] = cnt[e];
        start[e] = first;
        if (cnt[e]) active[chosen[e] - 1] = (int32_t)e;
        cols[e] = first;  // the next free column of e, for the placement
    }
    ds4_sync_block();
    if (t == 0) *n_active = NX > 0 ? chosen[NX - 1] : 0;
    // The placement in pair order within each expert (a stable sort by expert), by the threads
    // that own the experts, each walking the pairs as its count did (one thread placing every
    // pair, a 64-bit division and a dependent update a pair, took 315 us for a 256-token
    // prefill block's 1536 pairs on an H100).
    for (int64_t j0 = 0; j0 < n_pairs; j0 += MP) {
        const int64_t m = stage(j0);  // cols[e]: its owner's own write
        for (int64_t e = t; e < NX; e += T) {
            int32_t col = cols[e];
            for (int64_t j = 0; j < m; ++j) {
                if (pair_ids[j] == e) {
                    col_of[j0 + j] = col;
                    tok_of[col] = (int32_t)(j0 + j) / (int32_t)K;  // pairs are token-major, K a token
                    ++col;
                }
            }
            cols[e] = col;  // only e's owner reads or writes it
        }
    }
}

}  // namespace gpu
}  // namespace ds4
