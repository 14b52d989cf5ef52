// Test harness for engine/src/backend/gpu/dequant_rocmfp.cu (CUDA): reads raw ROCmFP blocks
// from a file, dequantises them on the GPU with ds4_gpu_dequant_rocmfp and
// writes the float32 results. Used by test_quant_gpu_source.py when a CUDA GPU
// is present. Usage: quant_gpu_harness TYPE N_ELEMENTS IN.bin OUT.bin
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" int ds4_gpu_dequant_rocmfp(uint32_t type, const uint8_t* src_dev, float* dst_dev, int64_t n_elements,
                                      void* stream);

static int fail(const char* what, int code) {
    std::fprintf(stderr, "quant_gpu_harness: %s failed (%d)\n", what, code);
    return 1;
}

int main(int argc, char** argv) {
    if (argc != 5) return fail("usage", 2);
    const uint32_t type = (uint32_t)std::strtoul(argv[1], nullptr, 10);
    const int64_t n = std::strtoll(argv[2], nullptr, 10);
    std::FILE* in = std::fopen(argv[3], "rb");
    if (!in) return fail("open input", 0);
    std::vector<uint8_t> raw;
    for (int c; (c = std::fgetc(in)) != EOF;) raw.push_back((uint8_t)c);
    std::fclose(in);
    uint8_t* d_raw = nullptr;
    float* d_out = nullptr;
    if (cudaMalloc(&d_raw, raw.size() + 1) != cudaSuccess) return fail("cudaMalloc", 0);
    if (cudaMalloc(&d_out, (size_t)n * sizeof(float) + 1) != cudaSuccess) return fail("cudaMalloc", 0);
    cudaMemcpy(d_raw, raw.data(), raw.size(), cudaMemcpyHostToDevice);
    const int rc = ds4_gpu_dequant_rocmfp(type, d_raw, d_out, n, nullptr);
    if (rc != 0) return fail("ds4_gpu_dequant_rocmfp", rc);
    if (cudaDeviceSynchronize() != cudaSuccess) return fail("kernel", 0);
    std::vector<float> out((size_t)n);
    cudaMemcpy(out.data(), d_out, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost);
    std::FILE* o = std::fopen(argv[4], "wb");
    if (!o || std::fwrite(out.data(), sizeof(float), out.size(), o) != out.size()) return fail("write", 0);
    std::fclose(o);
    return 0;
}
