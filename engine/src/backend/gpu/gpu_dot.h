// The one reduction every matrix-vector product of the GPU backend uses (matmul, the
// experts of moe): a block of kDotBlock threads splits into groups of L lanes (L = 32, 64,
// 128 or 256), and each group computes one weight row against up to NC columns.
//
// Memory: the group copies its row into shared memory a tile at a time (32 L elements,
// whole quant blocks) with loads as wide as the row's alignment allows (16 bytes on every
// tensor of the real model), so the weights stream in coalesced; the decoders of
// gpu_dequant.h then read the tile from shared memory.
//
// Order (what makes verify == decode bitwise): lane l reads chunks of 8 consecutive
// elements l, l + L, l + 2L, ... in ascending order; per chunk p = the 8 products w_j * x_j
// summed in element order with fmaf from 0, then acc = fmaf(d, p, acc) (d: the chunk's
// factor). The L partial sums are then added in a fixed shared-memory tree. Nothing depends
// on NC or on how many columns are live: NC columns run NC copies of the one-column
// arithmetic side by side, and with contraction off no instantiation can fuse differently.
// L is chosen from the matrix's shape alone (dot_lanes), never from the number of columns.
#pragma once
#include <stdint.h>

#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_dequant.h"

namespace ds4 {
namespace gpu {

constexpr int kDotBlock = 256;          // threads of a matrix-kernel block (a multiple of 32 and 64)
constexpr int kChunksPerLane = 4;       // chunks of 8 a lane decodes per tile
constexpr int kTileElems = kDotBlock * kChunksPerLane * kChunk;  // elements all groups of a block stage at once

// Bytes of m elements of a row (m a multiple of the type's block, or any m for float types).
template <uint32_t TYPE>
__host__ __device__ constexpr int64_t row_span_bytes(int64_t m) {
    return m / TypeInfo<TYPE>::block * TypeInfo<TYPE>::bytes;
}
template <uint32_t TYPE>
constexpr int kTileBytes = (int)row_span_bytes<TYPE>(kTileElems);  // a block's staging buffer

struct alignas(16) Vec16 {
    uint32_t a, b, c, d;
};
struct alignas(8) Vec8 {
    uint32_t a, b;
};
struct alignas(16) Float4 {
    float a, b, c, d;
};

template <class V>
__device__ inline void copy_vectors(const uint8_t* src, uint8_t* dst, int64_t n_vec, int lane, int L) {
    const V* s = reinterpret_cast<const V*>(src);
    V* d = reinterpret_cast<V*>(dst);
    for (int64_t i = lane; i < n_vec; i += L) d[i] = s[i];
}

// The group's copy of `bytes` bytes from global src to shared dst; vec (16, 8, 4, 2 or 1)
// divides the address of src. The bytes past the last whole vector go one by one.
__device__ inline void stage_span(const uint8_t* src, int64_t bytes, uint8_t* dst, int lane, int L, int vec) {
    const int64_t n_vec = bytes / vec;
    switch (vec) {
        case 16: copy_vectors<Vec16>(src, dst, n_vec, lane, L); break;
        case 8: copy_vectors<Vec8>(src, dst, n_vec, lane, L); break;
        case 4: copy_vectors<uint32_t>(src, dst, n_vec, lane, L); break;
        case 2: copy_vectors<uint16_t>(src, dst, n_vec, lane, L); break;
        default: copy_vectors<uint8_t>(src, dst, n_vec, lane, L); break;
    }
    for (int64_t i = n_vec * vec + lane; i < bytes; i += L) dst[i] = src[i];
}

// x[e0 .. e0 + 8) into v (len <= 8 values; x4: the address is 16-byte aligned and len == 8).
__device__ inline void load_x8(const float* x, int len, bool x4, float* v) {
    if (x4) {
        const Float4 a = reinterpret_cast<const Float4*>(x)[0], b = reinterpret_cast<const Float4*>(x)[1];
        v[0] = a.a, v[1] = a.b, v[2] = a.c, v[3] = a.d, v[4] = b.a, v[5] = b.b, v[6] = b.c, v[7] = b.d;
    } else {
        for (int j = 0; j < kChunk; ++j) v[j] = j < len ? x[j] : 0.0f;
    }
}

// Where a group sits in its block: the group index and the lane within it.
struct Lanes {
    int L, group, lane;
};
__device__ inline Lanes dot_lanes_of_thread(int L) {
    const int t = (int)ds4_thread_x();
    return Lanes{L, t / L, t % L};
}

// acc[c] (per lane) += the lane's share of row . x[c] for c < nc. Every thread of the block
// calls it with the same n (groups of rows past the matrix pass row = nullptr and only keep
// the barriers); `tile` is this group's part of the block's staging buffer
// (row_span_bytes<TYPE>(32 L) bytes). x4: every x[c] is 16-byte aligned.
template <int NC, uint32_t TYPE>
__device__ inline void group_dot(const uint8_t* row, int64_t n, const Lanes& ln, uint8_t* tile, int vec,
                                 const float* const* x, int nc, bool x4, const uint64_t* grid, float* acc) {
    const int64_t tile_elems = (int64_t)kChunksPerLane * kChunk * ln.L;
    for (int64_t e0 = 0; e0 < n; e0 += tile_elems) {
        const int64_t m = n - e0 < tile_elems ? n - e0 : tile_elems;
        if (row) stage_span(row + row_span_bytes<TYPE>(e0), row_span_bytes<TYPE>(m), tile, ln.lane, ln.L, vec);
        ds4_sync_block();
        if (row) {
            const int64_t chunks = (m + kChunk - 1) / kChunk;
            for (int j = 0; j < kChunksPerLane; ++j) {
                const int64_t k = ln.lane + (int64_t)j * ln.L;
                if (k >= chunks) break;
                float w[kChunk];
                const float d = load_chunk<TYPE>(tile, k, m, grid, w);
                const int64_t e = e0 + k * kChunk;
                const int len = m - k * kChunk < kChunk ? (int)(m - k * kChunk) : kChunk;
                for (int c = 0; c < NC; ++c) {
                    if (c >= nc) break;
                    float xv[kChunk];
                    load_x8(x[c] + e, len, x4 && len == kChunk, xv);
                    float p = 0.0f;
                    for (int jj = 0; jj < len; ++jj) p = ds4_fmaf(w[jj], xv[jj], p);
                    acc[c] = ds4_fmaf(d, p, acc[c]);
                }
            }
        }
        ds4_sync_block();
    }
}

// The groups' partial sums added in a fixed tree: on return out[c] holds row . x[c] in
// lane 0 of each group. `part` is shared memory of NC * kDotBlock floats. Every thread calls it.
template <int NC>
__device__ inline void group_reduce(const float* acc, const Lanes& ln, float* part, float* out) {
    const int t = ln.group * ln.L + ln.lane;
    for (int c = 0; c < NC; ++c) part[c * kDotBlock + t] = acc[c];
    ds4_sync_block();
    for (int s = ln.L / 2; s > 0; s >>= 1) {
        if (ln.lane < s) {
            for (int c = 0; c < NC; ++c) part[c * kDotBlock + t] += part[c * kDotBlock + t + s];
        }
        ds4_sync_block();
    }
    if (ln.lane == 0) {
        for (int c = 0; c < NC; ++c) out[c] = part[c * kDotBlock + t];
    }
    ds4_sync_block();
}

// Every type the matrix kernels decode, for the launchers' switches.
#define DS4_GPU_FOR_EACH_TYPE(X) \
    X(0) X(1) X(2) X(8) X(10) X(12) X(16) X(30) X(39) X(100) X(101) X(102) X(103) X(104) X(107)

}  // namespace gpu
}  // namespace ds4
