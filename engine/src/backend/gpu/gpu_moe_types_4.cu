// The expert kernels of the weight types of part 4 (gpu_dot.h DS4_GPU_TYPES_PART_4), compiled
// apart from the other parts' so a parallel build runs them side by side.
#include "backend/gpu/gpu_moe_kernels.h"

DS4_GPU_TYPES_PART_4(DS4_MOE_INSTANCES)
DS4_MOE_PART_LOOKUP(4)
