// A kernel's first position, as the launcher passes it: `rel`, plus the value of a device word
// when `base` is set. A step that may be replayed as a graph (gpu_backend.cu, step graphs) passes
// positions relative to the step's first one and the word that holds it, so the recorded launches
// stay right when the graph is replayed at another position; other calls pass absolute positions
// (base null). Shared by the launchers (host) and the kernels.
#pragma once
#include <stdint.h>

#include "core/hd.h"

namespace ds4 {
namespace gpu {

struct StepPos {
    int64_t rel = 0;
    const int64_t* base = nullptr;
};

DS4_HD inline StepPos absolute_pos(int64_t p) { return StepPos{p, nullptr}; }
// The position on the device (one load of the word per thread; it stays in L1).
DS4_HD inline int64_t pos_of(const StepPos& s) { return s.base ? s.rel + *s.base : s.rel; }

}  // namespace gpu
}  // namespace ds4
