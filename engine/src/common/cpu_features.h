// Run-time CPU feature detection: the build is portable and SIMD kernels are
// chosen here, never by -march=native.
#pragma once
#include <string>

namespace ds4 {

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
};

// Detected once; DS4KIT_CPU_FEATURES=scalar|avx2 in the environment caps it (for tests).
const CpuFeatures& cpu_features();
bool cpu_has_avx2_fma_f16c();
bool cpu_has_avx512();
std::string cpu_features_string();

}  // namespace ds4
