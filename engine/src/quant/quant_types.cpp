#include "quant/quant_types.h"

#include "common/error.h"

namespace ds4 {

namespace {
// kernels=true marks the types issue 2 requires dequantise and dot for.
const QTypeTraits kTypes[] = {
    {0, "F32", 1, 4, true},        {1, "F16", 1, 2, true},
    {2, "Q4_0", 32, 18, true},     {3, "Q4_1", 32, 20, false},
    {6, "Q5_0", 32, 22, false},    {7, "Q5_1", 32, 24, false},
    {8, "Q8_0", 32, 34, true},     {9, "Q8_1", 32, 36, false},
    {10, "Q2_K", 256, 84, true},   {11, "Q3_K", 256, 110, false},
    {12, "Q4_K", 256, 144, true},  {13, "Q5_K", 256, 176, false},
    {14, "Q6_K", 256, 210, false}, {15, "Q8_K", 256, 292, false},
    {16, "IQ2_XXS", 256, 66, true}, {17, "IQ2_XS", 256, 74, false},
    {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false},
    {20, "IQ4_NL", 32, 18, false}, {21, "IQ3_S", 256, 110, false},
    {22, "IQ2_S", 256, 82, false}, {23, "IQ4_XS", 256, 136, false},
    {24, "I8", 1, 1, false},       {25, "I16", 1, 2, false},
    {26, "I32", 1, 4, false},      {27, "I64", 1, 8, false},
    {28, "F64", 1, 8, false},      {29, "IQ1_M", 256, 56, false},
    {30, "BF16", 1, 2, true},      {34, "TQ1_0", 256, 54, false},
    {35, "TQ2_0", 256, 66, false}, {39, "MXFP4", 32, 17, true},
    {40, "NVFP4", 64, 36, false},  {41, "Q1_0", 128, 18, false},
    {100, "Q4_0_ROCMFP4", 32, 18, true},
    {101, "Q4_0_ROCMFP4_FAST", 32, 17, true},
    {102, "Q6_0_ROCMFPX", 32, 26, true},
    {103, "Q8_0_ROCMFPX", 32, 33, true},
    {104, "Q3_0_ROCMFPX", 32, 14, true},
    {107, "Q2_0_ROCMFP2", 32, 10, true},
};
}  // namespace

const QTypeTraits* qtype_traits(uint32_t id) {
    for (const auto& t : kTypes) {
        if (t.id == id) return &t;
    }
    return nullptr;
}

uint64_t qtype_row_bytes(uint32_t id, uint64_t n, const std::string& what) {
    const QTypeTraits* t = qtype_traits(id);
    if (!t) {
        throw ArgumentError(what + ": unknown tensor type id " + std::to_string(id));
    }
    if (n % t->block_size != 0) {
        throw ArgumentError(what + ": " + std::to_string(n) + " elements is not a multiple of the " +
                            t->name + " block size " + std::to_string(t->block_size));
    }
    const uint64_t blocks = n / t->block_size;
    if (blocks > UINT64_MAX / t->type_size) {
        throw ArgumentError(what + ": " + std::to_string(n) + " elements of " + t->name + " overflow a 64-bit byte count");
    }
    return blocks * t->type_size;
}

}  // namespace ds4
