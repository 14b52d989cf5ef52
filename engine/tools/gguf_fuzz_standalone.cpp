// Standalone driver for the GGUF fuzz target, for compilers without libFuzzer
// (gcc) and for replaying saved inputs:
//   gguf_fuzz_standalone FILE...                 run each file once
//   gguf_fuzz_standalone --mutate N SEED FILE...  N deterministic mutations of the files
// Mutations: bit flips, random bytes, interesting integers at random positions,
// truncation, splicing two inputs, insertion and deletion of chunks.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_file(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", path);
        std::exit(2);
    }
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

const uint64_t kInteresting[] = {0, 1, 2, 3, 4, 8, 12, 31, 32, 33, 64, 105, 127, 128, 255, 256, 0x7fff, 0xffff,
                                 0x7fffffffull, 0x80000000ull, 0xffffffffull, 1ull << 32, 1ull << 62,
                                 0x7fffffffffffffffull, 1ull << 63, ~0ull};

std::vector<uint8_t> mutate(const std::vector<std::vector<uint8_t>>& seeds, std::mt19937_64& rng) {
    std::vector<uint8_t> d = seeds[rng() % seeds.size()];
    const int n_ops = 1 + static_cast<int>(rng() % 4);
    for (int op = 0; op < n_ops; ++op) {
        if (d.empty()) {
            d.resize(rng() % 64);
            continue;
        }
        const size_t n = d.size();
        switch (rng() % 8) {
            case 0: case 1: d[rng() % n] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
            case 2: d[rng() % n] = static_cast<uint8_t>(rng()); break;
            case 3: case 4: {  // interesting integer, 4 or 8 bytes, often at an 4-aligned spot
                const uint64_t v = kInteresting[rng() % (sizeof(kInteresting) / sizeof(kInteresting[0]))];
                const size_t w = (rng() & 1) ? 8 : 4;
                if (n < w) break;
                size_t p = rng() % (n - w + 1);
                if (rng() & 1) p &= ~size_t(3);
                std::memcpy(d.data() + p, &v, w);
                break;
            }
            case 5: d.resize(rng() % n); break;
            case 6: {  // splice
                const auto& o = seeds[rng() % seeds.size()];
                const size_t cut = rng() % n;
                const size_t from = o.empty() ? 0 : rng() % o.size();
                d.resize(cut);
                d.insert(d.end(), o.begin() + static_cast<long>(from), o.end());
                break;
            }
            default: {  // insert or delete a chunk
                const size_t p = rng() % n;
                const size_t len = 1 + rng() % 32;
                if (rng() & 1) {
                    for (size_t k = 0; k < len; ++k) d.insert(d.begin() + static_cast<long>(p), static_cast<uint8_t>(rng()));
                } else {
                    d.erase(d.begin() + static_cast<long>(p), d.begin() + static_cast<long>(std::min(n, p + len)));
                }
            }
        }
    }
    return d;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 4 && std::strcmp(argv[1], "--mutate") == 0) {
        const uint64_t n = std::strtoull(argv[2], nullptr, 10);
        std::mt19937_64 rng(std::strtoull(argv[3], nullptr, 10));
        std::vector<std::vector<uint8_t>> seeds;
        for (int k = 4; k < argc; ++k) seeds.push_back(read_file(argv[k]));
        if (seeds.empty()) return 2;
        for (uint64_t i = 0; i < n; ++i) {
            const auto d = mutate(seeds, rng);
            LLVMFuzzerTestOneInput(d.data(), d.size());
        }
        std::printf("ran %llu mutated inputs\n", static_cast<unsigned long long>(n));
        return 0;
    }
    for (int k = 1; k < argc; ++k) {
        const auto d = read_file(argv[k]);
        LLVMFuzzerTestOneInput(d.data(), d.size());
    }
    std::printf("ran %d inputs\n", argc - 1);
    return 0;
}
