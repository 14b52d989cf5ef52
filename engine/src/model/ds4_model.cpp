#include "model/ds4_model.h"

#include "common/error.h"
#include "tokenizer/tokenizer_gguf.h"

namespace ds4 {

Ds4Model::Ds4Model(const std::string& path, int threads, const std::string& backend)
    : file_(path),
      hp_(read_ds4_hparams(file_)),
      w_(load_ds4_weights(file_, hp_)) {
    RopeSpec plain;
    plain.n_rot = hp_.n_rot;
    plain.freq_base = hp_.rope_freq_base;
    RopeSpec compressed = plain;
    compressed.freq_base = hp_.compress_rope_freq_base;
    if (hp_.yarn_factor > 1.0) {
        compressed.freq_scale = 1.0 / hp_.yarn_factor;
        compressed.ext_factor = 1.0;
        compressed.n_ctx_orig = hp_.yarn_orig_ctx;
        compressed.beta_fast = hp_.yarn_beta_fast;
        compressed.beta_slow = hp_.yarn_beta_slow;
    }
    for (int64_t r : hp_.compress_ratios) rope_.push_back(r ? compressed : plain);
    backend_ = make_backend(backend, threads);
    backend_->bind_weights(w_.table);
    // The device holds the weights now: drop the file's pages from this process, so on a
    // unified-memory APU the model is not resident twice (only reclaimable page cache stays).
    if (backend_->holds_weight_copies()) file_.bytes()->release_pages();
}

void Ds4Model::bind_extension(const WeightTable& table, uint64_t serial) const {
    std::lock_guard<std::mutex> lock(bind_mutex_);
    backend_->bind_weights(table);
    bound_extension_ = serial;
}

uint64_t Ds4Model::bound_extension() const {
    std::lock_guard<std::mutex> lock(bind_mutex_);
    return bound_extension_;
}

const Tokenizer& Ds4Model::tokenizer() const {
    if (!file_.has("tokenizer.ggml.tokens")) {
        throw FormatError(path() + ": GGUF metadata lacks 'tokenizer.ggml.tokens'; the model has no tokenizer");
    }
    // call_once: two Python threads may ask at once; an exception leaves it unbuilt (retried).
    std::call_once(tokenizer_once_, [this] { tokenizer_ = tokenizer_from_gguf(file_); });
    return *tokenizer_;
}

}  // namespace ds4
