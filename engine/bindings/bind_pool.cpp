#include "backend/cpu/cpu_api.h"
#include "bindings.h"

void bind_pool(py::module_& m) {
    m.def(
        "_pool_selftest",
        [](int threads, int64_t rounds, int callers, uint64_t seed) {
            ds4::PoolSelftestResult r;
            {
                py::gil_scoped_release nogil;
                r = ds4::thread_pool_selftest(threads, rounds, callers, seed);
            }
            py::dict d;
            d["rounds"] = r.rounds;
            d["chunks"] = r.chunks;
            d["worker_chunks"] = r.worker_chunks;
            d["indices"] = r.indices;
            d["throws"] = r.throws;
            d["caught"] = r.caught;
            d["failures"] = r.failures;
            d["first_failure"] = r.first_failure;
            return d;
        },
        py::arg("threads"), py::arg("rounds"), py::arg("callers") = 1, py::arg("seed") = 1,
        "Stress test of the CPU backend's thread pool (development): counts, failures and the first failure");
}
