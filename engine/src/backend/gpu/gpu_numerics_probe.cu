// core/numerics.h on the device: check-gpu-compile compiles it for sm_90 and gfx1151
// (so the DS4_HD code cannot stop compiling for a GPU unnoticed), and on a GPU
// tests/gpu/gpu_numerics_harness.cu compares its results with the host's bit for bit.
// Not used by the backend yet: its FP8/FP4/Hadamard/RoPE operations will call the
// same functions.
#include "backend/gpu/gpu_compat.h"
#include "core/numerics.h"

#include <stdint.h>

// One thread per row of n values. op 0: F16 round trip of each float; 1: FP8-E4M3 block
// round trip; 2: FP4-E2M1 block round trip; 3: Hadamard of each double row; 4: RoPE angles
// at the position in xd[row * n] (into the same row; needs the device math library).
extern "C" __global__ void ds4_numerics_probe_kernel(int op, float* xf, double* xd, int64_t n_rows, int64_t n,
                                                     ds4::RopeSpec rope) {
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
        default: break;
    }
}

#if DS4_GPU_HOST_CODE
// Host launcher: 0 on success, -1 for a bad op, else the runtime's error code.
extern "C" int ds4_gpu_numerics_probe(int op, float* xf_dev, double* xd_dev, int64_t n_rows, int64_t n,
                                      const ds4::RopeSpec* rope, void* stream) {
    if (op < 0 || op > 4) return -1;
    if (n_rows <= 0) return 0;
    const unsigned threads = 64;
    const unsigned blocks = (unsigned)((n_rows + threads - 1) / threads);
    const ds4::RopeSpec spec = rope ? *rope : ds4::RopeSpec{};
    ds4_launch(ds4_numerics_probe_kernel, dim3(blocks), dim3(threads), stream, op, xf_dev, xd_dev, n_rows, n, spec);
#if defined(__HIPCC__)
    return (int)hipGetLastError();
#else
    return (int)cudaGetLastError();
#endif
}
#endif
