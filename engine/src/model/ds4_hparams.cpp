#include "model/ds4_hparams.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "gguf/gguf_file.h"

namespace ds4 {

namespace {

bool is_numeric(GGUFType t) {
    return gguf_is_integer(t) || t == GGUFType::FLOAT32 || t == GGUFType::FLOAT64 || t == GGUFType::BOOL;
}

double scalar_number(const GGUFValue& v) {
    if (v.type == GGUFType::FLOAT32 || v.type == GGUFType::FLOAT64) return v.f;
    if (v.type == GGUFType::BOOL) return v.b ? 1.0 : 0.0;
    return gguf_is_signed(v.type) ? (double)v.i : (double)v.u;
}

// Reads `deepseek4.<key>` as numbers: a scalar gives one value, an array its
// elements. The writers differ in integer widths and scalar-versus-array, so
// any numeric encoding is accepted; anything else names the key and its type.
class KeyReader {
public:
    KeyReader(const GGUFFile& f, const std::string& arch) : f_(f), arch_(arch) {}

    const GGUFValue* find(const std::string& key) const { return f_.find(arch_ + "." + key); }

    std::vector<double> numbers(const std::string& key) const {
        const GGUFValue* v = find(key);
        if (!v) fail(key, "is missing");
        return to_numbers(key, *v);
    }

    double number(const std::string& key) const {
        const std::vector<double> xs = numbers(key);
        if (xs.size() != 1) fail(key, "must be a single number, found an array of " + std::to_string(xs.size()));
        return xs[0];
    }

    double number_or(const std::string& key, double dflt) const { return find(key) ? number(key) : dflt; }

    int64_t count(const std::string& key, int64_t min_value = 1) const { return as_count(key, number(key), min_value); }

    int64_t count_or(const std::string& key, int64_t dflt, int64_t min_value = 1) const {
        return find(key) ? count(key, min_value) : dflt;
    }

    // One value per layer: a scalar is repeated, an array must have >= n_layer entries.
    std::vector<double> per_layer(const std::string& key, int64_t n_layer) const {
        const GGUFValue* v = find(key);
        if (!v) fail(key, "is missing");
        std::vector<double> xs = to_numbers(key, *v);
        if (!v->is_array()) return std::vector<double>((size_t)n_layer, xs[0]);
        if ((int64_t)xs.size() < n_layer) {
            fail(key, "has " + std::to_string(xs.size()) + " entries, need one per layer (" + std::to_string(n_layer) + ")");
        }
        xs.resize((size_t)n_layer);
        return xs;
    }

    int64_t as_count(const std::string& key, double x, int64_t min_value) const {
        if (!(x == std::floor(x)) || x < (double)min_value || x > 1e12) {
            fail(key, "has value " + fmt(x) + ", expected an integer >= " + std::to_string(min_value));
        }
        return (int64_t)x;
    }

    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw FormatError(f_.path() + ": GGUF key '" + arch_ + "." + key + "' " + what);
    }

    static std::string fmt(double x) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", x);
        return buf;
    }

private:
    std::vector<double> to_numbers(const std::string& key, const GGUFValue& v) const {
        std::vector<double> out;
        if (v.is_array()) {
            if (!is_numeric(v.elem_type) || gguf_scalar_size(v.elem_type) == 0) {
                fail(key, "has type " + gguf_value_type_name(v) + ", expected numbers");
            }
            for (uint64_t k = 0; k < v.count; ++k) out.push_back(scalar_number(v.scalar_at(k)));
            if (out.empty()) fail(key, "is an empty array");
        } else {
            if (!is_numeric(v.type)) fail(key, "has type " + gguf_value_type_name(v) + ", expected a number");
            out.push_back(scalar_number(v));
        }
        return out;
    }

    const GGUFFile& f_;
    const std::string arch_;
};

}  // namespace

Ds4Hparams read_ds4_hparams(const GGUFFile& f, const std::string& expected_arch) {
    const GGUFValue* arch = f.find("general.architecture");
    if (!arch || arch->type != GGUFType::STRING || arch->str != expected_arch) {
        throw FormatError(f.path() + ": general.architecture is " +
                          (arch && arch->type == GGUFType::STRING ? "'" + arch->str + "'" : std::string("missing")) +
                          ", expected '" + expected_arch + "'");
    }
    KeyReader k(f, expected_arch);
    Ds4Hparams hp;
    hp.n_layer = k.count("block_count");
    hp.n_embd = k.count("embedding_length");
    if (k.find("vocab_size")) {
        hp.n_vocab = k.count("vocab_size");
    } else {
        const GGUFValue* toks = f.find("tokenizer.ggml.tokens");
        if (!toks || !toks->is_array() || toks->count == 0) {
            throw FormatError(f.path() + ": neither GGUF key '" + expected_arch +
                              ".vocab_size' nor 'tokenizer.ggml.tokens' is present");
        }
        hp.n_vocab = (int64_t)toks->count;
    }
    hp.n_head = k.count("attention.head_count");
    hp.n_head_kv = k.count_or("attention.head_count_kv", 1);
    hp.head_dim = k.count("attention.key_length");
    const int64_t value_len = k.count_or("attention.value_length", hp.head_dim);
    if (value_len != hp.head_dim) {
        k.fail("attention.value_length", "is " + std::to_string(value_len) + " but key_length is " +
                                             std::to_string(hp.head_dim) + " (K = V in DeepSeek V4)");
    }
    hp.n_rot = k.count("rope.dimension_count");
    hp.q_lora_rank = k.count("attention.q_lora_rank");
    hp.o_lora_rank = k.count("attention.output_lora_rank");
    hp.o_groups = k.count("attention.output_group_count");
    hp.n_expert = k.count("expert_count");
    hp.n_expert_used = k.count("expert_used_count");
    hp.n_expert_shared = k.count_or("expert_shared_count", 1, 0);
    const std::vector<double> ff = k.per_layer("expert_feed_forward_length", hp.n_layer);
    hp.n_ff_exp = k.as_count("expert_feed_forward_length", ff[0], 1);
    for (double x : ff) {
        if (x != ff[0]) k.fail("expert_feed_forward_length", "differs between layers; this engine needs one width");
    }
    // A DSpark drafter's blocks are never hash-routed and never compressed: Lucebox's loader
    // (deepseek4_dspark.cpp) forces both to 0 and does not need the keys, so neither do we.
    const bool drafter = expected_arch == kArchDrafter;
    hp.n_hash_layers = drafter ? k.count_or("hash_layer_count", 0, 0) : k.count("hash_layer_count", 0);
    hp.expert_weights_scale = k.number("expert_weights_scale");
    hp.expert_weights_norm = k.number("expert_weights_norm") != 0.0;
    hp.expert_gating_func = k.count("expert_gating_func", 0);
    hp.n_swa = k.count("attention.sliding_window");
    hp.n_hc = k.count("hyper_connection.count");
    hp.sinkhorn_iters = k.count("hyper_connection.sinkhorn_iterations");
    hp.hc_eps = k.number("hyper_connection.epsilon");
    hp.rms_eps = k.number("attention.layer_norm_rms_epsilon");
    hp.rope_freq_base = k.number("rope.freq_base");
    hp.yarn_factor = k.number_or("rope.scaling.factor", 1.0);
    hp.yarn_beta_fast = k.number_or("rope.scaling.yarn_beta_fast", 32.0);
    hp.yarn_beta_slow = k.number_or("rope.scaling.yarn_beta_slow", 1.0);
    hp.yarn_orig_ctx = k.count_or("rope.scaling.original_context_length", k.count_or("context_length", 0, 0), 0);
    hp.swiglu_clamp_exp = k.per_layer("swiglu_clamp_exp", hp.n_layer);
    hp.swiglu_clamp_shexp =
        k.find("swiglu_clamp_shexp") ? k.per_layer("swiglu_clamp_shexp", hp.n_layer) : hp.swiglu_clamp_exp;
    const bool no_ratios = drafter && !k.find("attention.compress_ratios");
    for (double r : no_ratios ? std::vector<double>((size_t)hp.n_layer, 0.0)
                              : k.per_layer("attention.compress_ratios", hp.n_layer)) {
        if (r != 0 && r != 4 && r != 128) {
            k.fail("attention.compress_ratios", "has ratio " + KeyReader::fmt(r) + "; DeepSeek V4 uses only 0, 4 and 128");
        }
        hp.compress_ratios.push_back((int64_t)r);
    }
    if (k.find("attention.compress_ratios") && !k.find("attention.compress_ratios")->is_array()) {
        k.fail("attention.compress_ratios", "must be an array with one ratio per layer");
    }
    // Keys only the compressed layers use (a DSpark drafter has none of them).
    const bool any_compressed = std::any_of(hp.compress_ratios.begin(), hp.compress_ratios.end(), [](int64_t r) { return r > 0; });
    const bool any_indexer = std::count(hp.compress_ratios.begin(), hp.compress_ratios.end(), 4) > 0;
    hp.compress_rope_freq_base = any_compressed ? k.number("attention.compress_rope_freq_base")
                                                : k.number_or("attention.compress_rope_freq_base", hp.rope_freq_base);
    hp.idx_n_head = any_indexer ? k.count("attention.indexer.head_count") : k.count_or("attention.indexer.head_count", 0, 0);
    hp.idx_head_dim = any_indexer ? k.count("attention.indexer.key_length") : k.count_or("attention.indexer.key_length", 0, 0);
    hp.idx_top_k = any_indexer ? k.count("attention.indexer.top_k") : k.count_or("attention.indexer.top_k", 0, 0);

    // Structure checks: what the forward pass assumes.
    auto S = [](int64_t v) { return std::to_string(v); };
    if (hp.n_head_kv != 1) {
        k.fail("attention.head_count_kv", "is " + S(hp.n_head_kv) + "; DeepSeek V4 has one latent KV head");
    }
    if (hp.n_head % hp.o_groups) {
        k.fail("attention.output_group_count",
               "is " + S(hp.o_groups) + ", which does not divide head_count " + S(hp.n_head));
    }
    if (hp.n_rot % 2 || hp.n_rot > hp.head_dim) {
        k.fail("rope.dimension_count",
               "is " + S(hp.n_rot) + "; it must be even and at most key_length " + S(hp.head_dim));
    }
    if (hp.expert_gating_func != kGatingSqrtSoftplus) {
        k.fail("expert_gating_func", "is " + S(hp.expert_gating_func) + "; DeepSeek V4 uses sqrt(softplus) (4)");
    }
    if (hp.n_expert_used > hp.n_expert) {
        k.fail("expert_used_count", "is " + S(hp.n_expert_used) + ", more than expert_count " + S(hp.n_expert));
    }
    if (hp.n_expert_shared != 1) {
        k.fail("expert_shared_count", "is " + S(hp.n_expert_shared) + "; this engine supports exactly one shared expert");
    }
    if (hp.n_hash_layers > hp.n_layer) {
        k.fail("hash_layer_count", "is " + S(hp.n_hash_layers) + ", more than block_count");
    }
    if (any_indexer && (hp.idx_head_dim & (hp.idx_head_dim - 1))) {
        k.fail("attention.indexer.key_length", "is " + S(hp.idx_head_dim) + "; the Hadamard transform needs a power of two");
    }
    if (any_indexer && hp.idx_head_dim < hp.n_rot) {
        k.fail("attention.indexer.key_length", "is " + S(hp.idx_head_dim) + ", smaller than rope.dimension_count");
    }
    if (hp.yarn_factor > 1.0 && hp.yarn_orig_ctx <= 0) {
        k.fail("rope.scaling.original_context_length", "is missing or 0, but YaRN (rope.scaling.factor " +
                                                           KeyReader::fmt(hp.yarn_factor) + ") needs it");
    }
    if (hp.sinkhorn_iters < 1) k.fail("hyper_connection.sinkhorn_iterations", "must be at least 1");
    return hp;
}

}  // namespace ds4
