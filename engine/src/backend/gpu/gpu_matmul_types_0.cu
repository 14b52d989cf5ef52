// The matmul kernels of the weight types of part 0 (gpu_dot.h DS4_GPU_TYPES_PART_0), compiled
// apart from the other parts' so a parallel build runs them side by side.
#include "backend/gpu/gpu_matmul_kernels.h"

DS4_GPU_TYPES_PART_0(DS4_MATMUL_INSTANCES)
DS4_MATMUL_PART_LOOKUP(0)
