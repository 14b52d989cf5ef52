// Backend comparison harness: runs the same operations through the full seam
// (alloc, upload, op, download, synchronize) on two backends over one model's
// weight table and reports how far B is from A, plus whether B keeps the
// invariance contract (each matmul column bitwise equal to the same column
// computed alone; each normalised row likewise). In the spirit of llama.cpp's
// test-backend-ops: the reference is another backend, not a formula.
//
// Cases, each with fresh random inputs (never zeros) and outputs poisoned with a
// NaN pattern before the run, so a value the backend never wrote, or one written
// outside its range, is reported rather than compared:
//   matmul    every 2-D weight of a type the engine has kernels for, all rows for
//             ncols = 1..8 and a few row ranges; padded strides on odd cases.
//   rms_norm  with each norm vector of the model as weight, and unweighted, for
//             1, 3 and 8 rows.
//   scale, copy  one case each (both must be exact).
//   embed, rope_tail (plain and inverse, two layers' RoPE), fp8_kv_round_trip,
//             indexer_transform (with and without FP4), hc_pre (u and split, each token
//             bitwise as computed alone), hc_pre_norm (on B bitwise hc_pre then rms_norm),
//             hc_post, hc_head, hc_mean, route (a hash layer and a
//             biased one: the experts must be the same, the weights are compared), moe (the last
//             layer, each token bitwise as computed alone): backend_compare_ops.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds4 {

struct CompareRecord {
    std::string op;      // "matmul", "rms_norm", "scale", "copy", or the other operation's name
    std::string tensor;  // the weight ("" for none)
    std::string type;    // its ggml type name ("F32" for an unweighted op)
    int ncols = 0;       // columns (matmul) or rows normalised together (rms_norm)
    int64_t row0 = 0;    // first output row (matmul)
    int64_t rows = 0;    // output rows (matmul) or row length (rms_norm, scale, copy)
    double nerr = 0.0;   // ||out_b - out_a|| / ||out_a|| (inf: an output missing or out of range)
    double maxabs = 0.0; // max |out_b - out_a|
    bool bitwise_cols_ok = false;  // B: every column / row bitwise equal to it computed alone
    std::string note;    // what went wrong, if anything
};

// Backend names as for make_backend ("cpu", "cuda", ...); binds the model's weight table
// on both. Throws what make_backend or the model loader throw.
std::vector<CompareRecord> compare_backends(const std::string& model_path, const std::string& backend_a,
                                            const std::string& backend_b, uint64_t seed);

}  // namespace ds4
