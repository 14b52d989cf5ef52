// A loaded DeepSeek V4 Flash model: the GGUF mapping, its hparams, the tensor
// views (bound to the backend that computes with them), the RoPE of each layer
// and the tokenizer. Sessions share it read-only.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf_file.h"
#include "model/ds4_hparams.h"
#include "model/ds4_weights.h"
#include "tokenizer/tokenizer.h"

namespace ds4 {

class Ds4Model {
public:
    // Opens and validates `path` and makes the named backend (backend.h make_backend);
    // threads <= 0 uses every hardware thread.
    Ds4Model(const std::string& path, int threads, const std::string& backend = "cpu");

    const std::string& path() const { return file_.path(); }
    const GGUFFile& file() const { return file_; }
    const Ds4Hparams& hparams() const { return hp_; }
    const Ds4Weights& weights() const { return w_; }
    const WeightTable& weights_table() const { return w_.table; }
    Backend& backend() const { return *backend_; }
    // RoPE of layer il: plain for ratio 0, YaRN with the compressed base otherwise.
    const RopeSpec& rope(int64_t il) const { return rope_[(size_t)il]; }
    // The tokenizer the file describes, built from its metadata on first use (a
    // process that only runs the engine does not pay its memory); a file without
    // tokenizer metadata (some test models) loads, and this throws FormatError.
    const Tokenizer& tokenizer() const;

    // A drafter's weights join the model's on its backend as an extension of the model's
    // table (its views first, ids unchanged). One extension is bound at a time: each has a
    // serial (> 0), and a drafter rebinds its own before computing if another was bound
    // since. Not while a session of this model computes (the backend's copies are replaced).
    void bind_extension(const WeightTable& table, uint64_t serial) const;
    uint64_t bound_extension() const;

private:
    GGUFFile file_;
    Ds4Hparams hp_;
    Ds4Weights w_;
    std::vector<RopeSpec> rope_;
    std::unique_ptr<Backend> backend_;
    mutable std::once_flag tokenizer_once_;
    mutable std::unique_ptr<Tokenizer> tokenizer_;
    mutable std::mutex bind_mutex_;
    mutable uint64_t bound_extension_ = 0;  // 0: the model's own table
};

}  // namespace ds4
