// gemm_int8_sim.cpp with the tensor-core path: the fragments as the CUDA kernel loads them and
// the mma.sync product as the PTX ISA defines it (gpu_mma_s8.h DS4_MMA_EMULATE).
#define DS4_MMA_EMULATE 1
#include "gemm_int8_sim.cpp"
