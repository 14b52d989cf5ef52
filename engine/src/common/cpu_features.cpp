#include "common/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace ds4 {

static CpuFeatures detect() {
    CpuFeatures f;
#if defined(DS4_X86) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.f16c = __builtin_cpu_supports("f16c");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
#endif
    // Allow tests and users to cap the dispatch level to check every code path.
    if (const char* cap = std::getenv("DS4KIT_CPU_FEATURES")) {
        if (std::strcmp(cap, "scalar") == 0) {
            f = CpuFeatures{};
        } else if (std::strcmp(cap, "avx2") == 0) {
            f.avx512f = f.avx512bw = f.avx512vl = false;
        }
    }
    return f;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect();
    return f;
}

bool cpu_has_avx2_fma_f16c() {
    const auto& f = cpu_features();
    return f.avx2 && f.fma && f.f16c;
}

bool cpu_has_avx512() {
    const auto& f = cpu_features();
    return cpu_has_avx2_fma_f16c() && f.avx512f && f.avx512bw && f.avx512vl;
}

std::string cpu_features_string() {
    const auto& f = cpu_features();
    std::string s;
    auto add = [&](bool on, const char* name) {
        if (on) { if (!s.empty()) s += ","; s += name; }
    };
    add(f.avx2, "avx2");
    add(f.fma, "fma");
    add(f.f16c, "f16c");
    add(f.avx512f, "avx512f");
    add(f.avx512bw, "avx512bw");
    add(f.avx512vl, "avx512vl");
    return s.empty() ? "scalar" : s;
}

}  // namespace ds4
