// core/numerics.h on the device: check-gpu-compile compiles it for sm_90 and gfx1151
// (so the DS4_HD code cannot stop compiling for a GPU unnoticed), and on a GPU
// tests/gpu/gpu_numerics_harness.cu compares its results with the host's bit for bit.
// Not used by the backend yet: its FP8/FP4/Hadamard/RoPE operations will call the
// same functions.
#include "backend/gpu/gpu_compat.h"
#include "backend/gpu/gpu_math.h"  // before gpu_dequant.h: core/numerics.h needs its device libm
#include "backend/gpu/gpu_dequant.h"
#include "core/numerics.h"

#include <stdint.h>

// One thread per row of n values. op 0: F16 round trip of each float; 1: FP8-E4M3 block
// round trip; 2: FP4-E2M1 block round trip; 3: Hadamard of each double row; 4: RoPE angles
// at the position in xd[row * n] (into the same row; needs the device math library); 6: the
// dequantisers' integer-to-float conversions of the bytes 0..n-1 into 4 rows (gpu_dequant.h:
// u_to_f32, s8_to_f32, magic_byte_to_f32 of byte 1, and of an int8 stored + 128).
extern "C" __global__ void ds4_numerics_probe_kernel(int op, float* xf, double* xd, int64_t n_rows, int64_t n,
                                                     ds4::RopeSpec rope) {
    ds4_kernel_entry();
    const int64_t row = (int64_t)ds4_block_x() * ds4_block_dim_x() + ds4_thread_x();
    if (row >= n_rows) return;
    float* f = xf + row * n;
    double* d = xd + row * n;
    switch (op) {
        case 0:
            for (int64_t i = 0; i < n; ++i) f[i] = ds4::f16_to_f32(ds4::f32_to_f16(f[i]));
            break;
        case 1: ds4::fp8_e4m3_round_trip(f, n); break;
        case 2: ds4::fp4_e2m1_round_trip(f, n); break;
        case 3: ds4::hadamard_inplace(d, n); break;
#if DS4_GPU_HAVE_RUNTIME
        case 4: ds4::rope_angles(d[0], rope, d); break;
#endif
        case 6:
            for (int64_t i = 0; i < n; ++i) {
                const uint32_t b = (uint32_t)i & 0xFFu;
                f[i] = row == 0   ? ds4::gpu::u_to_f32(b)
                       : row == 1 ? ds4::gpu::s8_to_f32(b)
                       : row == 2 ? ds4::gpu::magic_byte_to_f32(b << 8 | 0x5Au, 1)
                                  : ds4::gpu::magic_byte_to_f32((b ^ 0x80u) << 16 | 0x5A5Au, 2, 128.0f);
            }
            break;
        default: break;
    }
}

// op 5: Hadamard of each double row by a whole block (gpu_math.h hadamard_block, as the
// compressor and the indexer run it), a block per row, n <= kProbeRow.
constexpr int kProbeRow = 1024;
extern "C" __global__ void ds4_numerics_probe_block_kernel(double* xd, int64_t n) {
    ds4_kernel_entry();
    __shared__ double row[kProbeRow];
    double* d = xd + (int64_t)ds4_block_x() * n;
    for (int64_t i = ds4_thread_x(); i < n; i += ds4_block_dim_x()) row[i] = d[i];
    ds4::gpu::hadamard_block(row, n);
    for (int64_t i = ds4_thread_x(); i < n; i += ds4_block_dim_x()) d[i] = row[i];
}

#if DS4_GPU_HOST_CODE
// Host launcher: 0 on success, -1 for a bad op, else the runtime's error code.
extern "C" int ds4_gpu_numerics_probe(int op, float* xf_dev, double* xd_dev, int64_t n_rows, int64_t n,
                                      const ds4::RopeSpec* rope, void* stream) {
    if (op < 0 || op > 6 || (op == 5 && n > kProbeRow)) return -1;
    if (n_rows <= 0) return 0;
    if (op == 5) {
        ds4_launch(ds4_numerics_probe_block_kernel, dim3((unsigned)n_rows), dim3(128), stream, xd_dev, n);
    } else {
        const unsigned threads = 64;
        const unsigned blocks = (unsigned)((n_rows + threads - 1) / threads);
        const ds4::RopeSpec spec = rope ? *rope : ds4::RopeSpec{};
        ds4_launch(ds4_numerics_probe_kernel, dim3(blocks), dim3(threads), stream, op, xf_dev, xd_dev, n_rows, n,
                   spec);
    }
#if defined(__HIPCC__)
    return (int)hipGetLastError();
#else
    return (int)cudaGetLastError();
#endif
}
#endif
