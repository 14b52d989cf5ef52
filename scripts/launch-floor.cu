// What a dependent kernel launch costs on this GPU when the kernel does (almost) nothing: the
// floor under each of a decode layer's ~26 launches (docs/gpu-backend.md "Step 30").
//
//   nvcc -std=c++17 -O3 -arch=sm_90 -o /tmp/launch-floor scripts/launch-floor.cu && /tmp/launch-floor
//
// A CUDA graph of N kernels in a row on one stream, each block reading one word the kernel
// before wrote and writing one for the next (a true dependency, as between the backend's
// kernels), replayed R times; printed: microseconds a kernel, for grids of 1, 132 and 264
// blocks of 256 threads, with programmatic dependent launch (the backend's default: each
// kernel waits in griddepcontrol.wait) and without. CUDA only (a measurement of the card).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

// Kernel i: every block reads word i (written by kernel i - 1) and block 0 writes word i + 1.
__global__ void step_kernel(int* words, int i) {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const int v = *(volatile int*)&words[i];
    if (blockIdx.x == 0 && threadIdx.x == 0) words[i + 1] = v + 1;
}

static float time_chain(int kernels, int blocks, bool pdl, int replays) {
    int* words = nullptr;
    CHECK(cudaMalloc(&words, (kernels + 1) * sizeof(int)));
    CHECK(cudaMemset(words, 0, (kernels + 1) * sizeof(int)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(256);
    cfg.stream = s;
    cfg.attrs = pdl ? &attr : nullptr;
    cfg.numAttrs = pdl ? 1 : 0;
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kernels; ++i) CHECK(cudaLaunchKernelEx(&cfg, step_kernel, words, i));
    CHECK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphLaunch(ge, s));  // warm
    CHECK(cudaStreamSynchronize(s));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaEventRecord(a, s));
    for (int r = 0; r < replays; ++r) CHECK(cudaGraphLaunch(ge, s));
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    int last = -1;
    CHECK(cudaMemcpy(&last, words + kernels, sizeof(int), cudaMemcpyDeviceToHost));
    if (last != kernels) {
        std::fprintf(stderr, "chain broke: word %d is %d, not %d\n", kernels, last, kernels);
        std::exit(1);
    }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(words));
    return 1000.0f * ms / (float)(replays * kernels);
}

int main() {
    cudaDeviceProp p{};
    CHECK(cudaGetDeviceProperties(&p, 0));
    std::printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    const int kernels = 208, replays = 50;  // 208: eight layers' worth of the decode's launches
    for (int blocks : {1, p.multiProcessorCount, 2 * p.multiProcessorCount}) {
        for (bool pdl : {true, false}) {
            std::printf("%4d blocks of 256, %-22s %.2f us a kernel (%d kernels, %d replays)\n", blocks,
                        pdl ? "early launch (PDL):" : "plain stream order:", time_chain(kernels, blocks, pdl, replays),
                        kernels, replays);
        }
    }
    return 0;
}
