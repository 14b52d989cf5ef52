// Bit-for-bit comparison of float outputs for the host simulations (attention_sim.cpp,
// attention_inputs_sim.cpp): prints the first differing value and counts the failure.
#pragma once
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

inline bool same_floats(int& failures, const std::string& name, const char* what, const std::vector<float>& got,
                        const std::vector<float>& want) {
    for (size_t i = 0; i < got.size(); ++i) {
        if (std::memcmp(&got[i], &want[i], 4) != 0) {
            std::printf("FAIL %s: %s value %zu: %.9g instead of %.9g\n", name.c_str(), what, i, got[i], want[i]);
            ++failures;
            return false;
        }
    }
    return true;
}
