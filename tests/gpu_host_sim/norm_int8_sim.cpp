// gpu_norm.cu's rms_norm with int8 columns (the norm that feeds a Q8_0 matmul on int8 columns
// writes them itself, GpuBackend::norm_feeds) runs on the host (sim_runtime.h) against the two
// kernels it replaces: the norm's float rows must be those of the norm alone, and its codes and
// scales those the quantiser (gpu_int8_columns.cu) writes of them, byte for byte. Rows of the
// model's widths (4096: h and the head's input; 1024: q_lat; 512) and others that are a multiple
// of 32 but not of the block (4064, 96, 32), with and without a weight, several rows a launch,
// and values where the tree's order shows: large and tiny magnitudes, a row of zeros (scale 0,
// codes 0), rows whose blocks tie at their maximum, and rows of integers and halves. Built a second time with -DDS4_GPU_SIM_NO_SHUFFLE for the targets without shuffles.
// Prints one line per case; exit status 1 if any differs.
#include "sim_runtime.h"

#include "backend/gpu/gpu_int8_columns.cu"
#include "backend/gpu/gpu_norm.cu"
#include "int8_sim_common.h"

namespace {

enum class Fill { normal, large, tiny, zeros, ties, halves };

std::vector<float> row_values(int64_t n, int64_t rows, Fill fill, std::mt19937_64& rng) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x((size_t)(n * rows));
    for (size_t i = 0; i < x.size(); ++i) {
        switch (fill) {
            case Fill::normal: x[i] = nd(rng); break;
            case Fill::large: x[i] = 1e18f * nd(rng); break;
            case Fill::tiny: x[i] = 1e-30f * nd(rng); break;
            case Fill::zeros: x[i] = 0.0f; break;
            case Fill::ties: x[i] = (i % 7 == 0) ? 3.0f : (i % 7 == 3 ? -3.0f : nd(rng)); break;  // equal maxima
            case Fill::halves: x[i] = (float)((int64_t)(i % 255) - 127) + 0.5f; break;  // integers and halves before the norm
        }
    }
    return x;
}

void norm_int8_case(const std::string& name, int64_t n, int64_t rows, bool weighted, Fill fill) {
    std::mt19937_64 rng(std::hash<std::string>()(name));
    const std::vector<float> x = row_values(n, rows, fill, rng);
    std::vector<float> w((size_t)n);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (float& v : w) v = 1.0f + 0.2f * nd(rng);
    const float* wp = weighted ? w.data() : nullptr;
    const double eps = 1e-6;
    // The two kernels the fused norm replaces.
    std::vector<float> alone = x;
    sim_launch((unsigned)rows, 1, ds4::gpu::kNormThreads,
               [&] { ds4_rms_norm_kernel(alone.data(), wp, n, eps, alone.data(), nullptr, nullptr); });
    const Cols want = quantise(alone, n, rows, 1, 0, n);
    // The norm with its int8 columns, into a buffer of the quantiser's layout.
    const int64_t values = n * rows;
    std::vector<float> fused = x;
    Cols got{std::vector<uint8_t>(want.bytes.size(), 0xCD)};
    auto* q = reinterpret_cast<int8_t*>(got.bytes.data());
    auto* d = const_cast<float*>(got.d(values));
    sim_launch((unsigned)rows, 1, ds4::gpu::kNormThreads,
               [&] { ds4_rms_norm_kernel(fused.data(), wp, n, eps, fused.data(), q, d); });
    if (!same_bits(fused, alone)) {
        report(false, name, "the float rows differ from the norm alone");
    } else if (std::memcmp(got.bytes.data(), want.bytes.data(), (size_t)values) != 0) {
        report(false, name, "codes differ from the quantiser's");
    } else if (std::memcmp(got.d(values), want.d(values), (size_t)(values / 32) * 4) != 0) {
        report(false, name, "scales differ from the quantiser's");
    } else {
        report(true, name);
    }
}

}  // namespace

int main() {
    norm_int8_case("model width 4096, 1 row, weighted", 4096, 1, true, Fill::normal);
    norm_int8_case("4096, 3 rows (a verify's columns)", 4096, 3, true, Fill::normal);
    norm_int8_case("q_lat 1024, 2 rows", 1024, 2, true, Fill::normal);
    norm_int8_case("512, no weight, 4 rows", 512, 4, false, Fill::normal);
    norm_int8_case("4064 (a multiple of 32, not of the block)", 4064, 2, true, Fill::normal);
    norm_int8_case("96 and 32 values", 96, 1, true, Fill::normal);
    norm_int8_case("32 values, 5 rows", 32, 5, false, Fill::normal);
    norm_int8_case("large values (1e18)", 4096, 1, true, Fill::large);
    norm_int8_case("tiny values (1e-30)", 1024, 1, true, Fill::tiny);
    norm_int8_case("a row of zeros (scale 0)", 1024, 1, true, Fill::zeros);
    norm_int8_case("blocks whose maximum ties", 4096, 2, false, Fill::ties);
    norm_int8_case("integers and halves before the norm", 4096, 1, false, Fill::halves);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
