// The fixed reduction tree of the GPU backend's kernels, with one barrier per three levels.
//
// The order (what every reduction of a group of L values defines, L a power of two): for
// s = L/2, L/4, ..., 1, p[x] = op(p[x], p[x + s]) for x < s; p[0] is the result. Done level by
// level that costs a barrier per level (8 for a block of 256). Here a round does three levels:
// lane z < s/4 reads the 8 values p[z + k s/4] and p[z + k s/4 + s] (k < 4) those levels combine
// into p[z] and combines them in the levels' order, so the result is the level-by-level tree's
// bit for bit, with ceil(log2(L) / 3) barriers. A lane writes only its own p[z], which no other
// lane of the round reads. Wave size plays no part (shared memory and block barriers only).
#pragma once
#include "backend/gpu/gpu_compat.h"

namespace ds4 {
namespace gpu {

struct TreeAdd {
    template <class T>
    __device__ T operator()(T a, T b) const {
        return a + b;
    }
};

// p[c * stride + group_base + lane] for c < NS holds lane `lane`'s NS values of its group of L
// (every thread of the block calls it, after writing its values, with the barrier still to
// come); on return p[c * stride + group_base] holds value c of the group's tree. Ends with a
// barrier, so the caller can read the results.
template <int NS, class T, class Op = TreeAdd>
__device__ inline void tree_reduce(T* p, int stride, int group_base, int lane, int L, Op op = Op()) {
    ds4_sync_block();
    for (int s = L / 2; s > 0; s /= 8) {
        const int q = s / 4;
        if (s >= 4 ? lane < q : lane == 0) {
            for (int c = 0; c < NS; ++c) {
                T* v = p + c * stride + group_base + lane;
                if (s >= 4) {  // levels s, s / 2, s / 4
                    const T a0 = op(v[0], v[s]), a1 = op(v[q], v[q + s]);
                    const T a2 = op(v[2 * q], v[2 * q + s]), a3 = op(v[3 * q], v[3 * q + s]);
                    v[0] = op(op(a0, a2), op(a1, a3));
                } else if (s == 2) {  // levels 2, 1
                    v[0] = op(op(v[0], v[2]), op(v[1], v[3]));
                } else {  // level 1
                    v[0] = op(v[0], v[1]);
                }
            }
        }
        ds4_sync_block();
    }
}

}  // namespace gpu
}  // namespace ds4
