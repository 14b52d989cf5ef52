// The table of tensor element types the engine knows: ggml's standard ids plus
// Lucebox's ROCmFP ids (ds4-model.md section 5). The GGUF reader uses it to size
// tensors; the quant kernels to dispatch. Sizes are checked against gguf-py's
// GGML_QUANT_SIZES in the tests.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ds4 {

enum class QType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21,
    IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28,
    IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41,
    // Lucebox ROCmFP (not standard ggml).
    Q4_0_ROCMFP4 = 100, Q4_0_ROCMFP4_FAST = 101, Q6_0_ROCMFPX = 102,
    Q8_0_ROCMFPX = 103, Q3_0_ROCMFPX = 104, Q2_0_ROCMFP2 = 107,
};

struct QTypeTraits {
    uint32_t id;
    const char* name;
    uint32_t block_size;   // elements per block
    uint32_t type_size;    // bytes per block
    bool kernels;          // dequantise + dot implemented by the engine
};

// nullptr for an id the engine does not know (including ROCmFP 105/106, layout unpublished).
const QTypeTraits* qtype_traits(uint32_t id);

// Bytes for n elements of type id; throws ds4::ArgumentError if n is not a whole
// number of blocks or the id is unknown. `what` names the tensor for the message.
uint64_t qtype_row_bytes(uint32_t id, uint64_t n, const std::string& what);

}  // namespace ds4
