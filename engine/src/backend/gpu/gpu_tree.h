// The fixed reduction tree of the GPU backend's kernels, with one barrier per three levels.
//
// The order (what every reduction of a group of L values defines, L a power of two): for
// s = L/2, L/4, ..., 1, p[x] = op(p[x], p[x + s]) for x < s; p[0] is the result. Done level by
// level that costs a barrier per level (8 for a block of 256). Here a round does three levels:
// lane z < s/4 reads the 8 values p[z + k s/4] and p[z + k s/4 + s] (k < 4) those levels combine
// into p[z] and combines them in the levels' order, so the result is the level-by-level tree's
// bit for bit, with ceil(log2(L) / 3) barriers. A lane writes only its own p[z], which no other
// lane of the round reads. Wave size plays no part in tree_reduce (shared memory and block
// barriers only); warp_tree_reduce runs the last five levels with shuffles, in the same order.
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
// come); on return p[c * stride + group_base + z] for z < keep holds value c of lane z after the
// tree's levels L/2 .. keep (keep a power of two, 1 <= keep <= L; keep = 1: the whole tree, the
// result in p[c * stride + group_base]). A round does up to three levels, never one below keep.
// Ends with a barrier, so the caller can read the results.
template <int NS, class T, class Op = TreeAdd>
__device__ inline void tree_reduce_to(T* p, int stride, int group_base, int lane, int L, int keep, Op op = Op()) {
    ds4_sync_block();
    for (int s = L / 2; s >= keep; s /= 8) {
        const int q = s / 4;
        if (s >= 4 * keep) {  // levels s, s / 2, s / 4
            if (lane < q) {
                for (int c = 0; c < NS; ++c) {
                    T* v = p + c * stride + group_base + lane;
                    const T a0 = op(v[0], v[s]), a1 = op(v[q], v[q + s]);
                    const T a2 = op(v[2 * q], v[2 * q + s]), a3 = op(v[3 * q], v[3 * q + s]);
                    v[0] = op(op(a0, a2), op(a1, a3));
                }
            }
        } else if (s == 2 * keep) {  // levels s, s / 2
            if (lane < keep) {
                for (int c = 0; c < NS; ++c) {
                    T* v = p + c * stride + group_base + lane;
                    v[0] = op(op(v[0], v[s]), op(v[keep], v[keep + s]));
                }
            }
        } else if (lane < keep) {  // level s == keep
            for (int c = 0; c < NS; ++c) {
                T* v = p + c * stride + group_base + lane;
                v[0] = op(v[0], v[s]);
            }
        }
        ds4_sync_block();
    }
}

// The whole tree: value c of the group in p[c * stride + group_base].
template <int NS, class T, class Op = TreeAdd>
__device__ inline void tree_reduce(T* p, int stride, int group_base, int lane, int L, Op op = Op()) {
    tree_reduce_to<NS>(p, stride, group_base, lane, L, 1, op);
}

// Levels 16 .. 1 of the tree over 32 values held one a lane in an aligned group of 32 lanes (a
// warp, or half a wave64), in the tree's order: on return lane 0's v[c] is value c's tree over
// the 32. Every lane of the warp calls it (shuffles need them all); where the target has no
// 32-lane shuffle (DS4_GPU_SHUFFLE32 == 0: the HIP-CPU runtime) callers keep tree_reduce.
#if DS4_GPU_SHUFFLE32
template <int NS>
__device__ inline void warp_tree_reduce(float* v) {
#pragma unroll
    for (int s = 16; s > 0; s /= 2) {
#pragma unroll
        for (int c = 0; c < NS; ++c) v[c] = v[c] + ds4_shfl_down32(v[c], s);  // p[x] + p[x + s], as the tree
    }
}
#endif

}  // namespace gpu
}  // namespace ds4
