#include "model/ds4_drafter.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "common/error.h"
#include "quant/quant_dot.h"

namespace ds4 {

namespace {

constexpr int64_t kMaxBlock = 32;  // Lucebox accepts 2..16; 5 in the field

// An integer drafter key under `<arch>.`; Lucebox writes them UINT32 (bool accepted for flags).
int64_t drafter_int(const GGUFFile& f, const std::string& key, bool required, int64_t def) {
    const std::string full = std::string(kArchDrafter) + "." + key;
    const GGUFValue* v = f.find(full);
    if (!v) {
        if (required) throw FormatError(f.path() + ": GGUF key '" + full + "' is missing");
        return def;
    }
    switch (v->type) {
        case GGUFType::UINT8: case GGUFType::UINT16: case GGUFType::UINT32: case GGUFType::UINT64:
            return (int64_t)v->u;
        case GGUFType::INT8: case GGUFType::INT16: case GGUFType::INT32: case GGUFType::INT64:
            return v->i;
        case GGUFType::BOOL:
            return v->b ? 1 : 0;
        default:
            throw FormatError(f.path() + ": GGUF key '" + full + "' has type " + gguf_value_type_name(*v) +
                              ", expected an integer");
    }
}

std::vector<int64_t> drafter_ints(const GGUFFile& f, const std::string& key) {
    const std::string full = std::string(kArchDrafter) + "." + key;
    const GGUFValue* v = f.find(full);
    if (!v) throw FormatError(f.path() + ": GGUF key '" + full + "' is missing");
    const bool ok = v->is_array() && (v->elem_type == GGUFType::INT32 || v->elem_type == GGUFType::UINT32);
    if (!ok) {
        throw FormatError(f.path() + ": GGUF key '" + full + "' has type " + gguf_value_type_name(*v) +
                          ", expected ARRAY[INT32]");
    }
    std::vector<int64_t> out;
    for (uint64_t k = 0; k < v->count; ++k) {
        const GGUFValue e = v->scalar_at(k);
        out.push_back(v->elem_type == GGUFType::INT32 ? e.i : (int64_t)e.u);
    }
    return out;
}

Ds4Hparams drafter_hparams(const GGUFFile& f) {
    Ds4Hparams hp = read_ds4_hparams(f, kArchDrafter);
    for (size_t il = 0; il < hp.compress_ratios.size(); ++il) {
        if (hp.compress_ratios[il] != 0) {
            throw FormatError(f.path() + ": GGUF key '" + std::string(kArchDrafter) +
                              ".attention.compress_ratios' gives layer " + std::to_string(il) + " ratio " +
                              std::to_string(hp.compress_ratios[il]) + "; DSpark blocks have no compressor (ratio 0)");
        }
    }
    // Lucebox (deepseek4_dspark.cpp, load_deepseek4_dspark_drafter: "The DSpark blocks are
    // NOT hash-routing layers") forces 0 whatever the file says: the blocks' checkpoint ids
    // are 43..45, past the hash layers, and the file has no tid2eid. So do we.
    hp.n_hash_layers = 0;
    return hp;
}

Ds4DrafterConfig drafter_config(const GGUFFile& f, const Ds4Hparams& hp, const Ds4Hparams& target) {
    Ds4DrafterConfig c;
    const std::string P = std::string(kArchDrafter) + ".";
    c.n_target_layers = drafter_int(f, "dflash.n_target_layers", true, 0);
    c.block_size = drafter_int(f, "dflash.block_size", true, 0);
    const int64_t mask = drafter_int(f, "dflash.mask_token_id", true, 0);
    c.head_hc = drafter_int(f, "dflash.head_hc_enabled", false, 0) != 0;
    c.capture_layers = drafter_ints(f, "dflash.capture_layer_ids");
    if (drafter_int(f, "dflash.dspark.enabled", true, 0) == 0) {
        throw FormatError(f.path() + ": GGUF key '" + P + "dflash.dspark.enabled' is 0; only DSpark drafters run here");
    }
    c.markov_rank = drafter_int(f, "dflash.dspark.markov_rank", true, 0);
    const int64_t dspark_vocab = drafter_int(f, "dflash.dspark.vocab_size", false, hp.n_vocab);
    c.confidence_dim = drafter_int(f, "dflash.dspark.confidence_dim", false, 0);
    auto bad = [&](const std::string& key, const std::string& why) {
        throw FormatError(f.path() + ": GGUF key '" + P + key + "' " + why);
    };
    if (c.block_size < 1 || c.block_size > kMaxBlock) {
        bad("dflash.block_size", "is " + std::to_string(c.block_size) + "; expected 1.." + std::to_string(kMaxBlock));
    }
    if (c.markov_rank < 1) bad("dflash.dspark.markov_rank", "must be at least 1");
    if ((int64_t)c.capture_layers.size() != c.n_target_layers) {
        bad("dflash.capture_layer_ids", "has " + std::to_string(c.capture_layers.size()) +
                                            " layers but dflash.n_target_layers is " + std::to_string(c.n_target_layers));
    }
    for (int64_t il : c.capture_layers) {
        if (il < 0 || il >= target.n_layer) {
            bad("dflash.capture_layer_ids", "names layer " + std::to_string(il) + ", outside the target's layers 0.." +
                                                std::to_string(target.n_layer - 1));
        }
    }
    if (hp.n_embd != target.n_embd) {
        bad("embedding_length", "is " + std::to_string(hp.n_embd) + " but the target's n_embd is " +
                                    std::to_string(target.n_embd));
    }
    if (hp.n_vocab != target.n_vocab) {
        bad("vocab_size", "is " + std::to_string(hp.n_vocab) + " but the target's vocabulary has " +
                              std::to_string(target.n_vocab) + " tokens");
    }
    if (dspark_vocab != target.n_vocab) {
        bad("dflash.dspark.vocab_size", "is " + std::to_string(dspark_vocab) + " but the target's vocabulary has " +
                                            std::to_string(target.n_vocab) + " tokens");
    }
    if (mask < 0 || mask >= target.n_vocab) {
        bad("dflash.mask_token_id", "is " + std::to_string(mask) + ", outside the vocabulary 0.." +
                                        std::to_string(target.n_vocab - 1));
    }
    c.mask_token_id = (int32_t)mask;
    // Lucebox (dspark_head.cpp, build_markov_chain_graph) knows two confidence heads: on
    // h_pre alone (n_embd) or on [h_pre; W1[prev]] (n_embd + markov_rank).
    if (c.confidence_dim != 0 && c.confidence_dim != hp.n_embd && c.confidence_dim != hp.n_embd + c.markov_rank) {
        bad("dflash.dspark.confidence_dim", "is " + std::to_string(c.confidence_dim) + "; expected n_embd (" +
                                                std::to_string(hp.n_embd) + ") or n_embd + markov_rank (" +
                                                std::to_string(hp.n_embd + c.markov_rank) + ")");
    }
    return c;
}

}  // namespace

Ds4Drafter::Ds4Drafter(const std::string& path, std::shared_ptr<const Ds4Model> target)
    : target_(std::move(target)),
      file_(path),
      hp_(drafter_hparams(file_)),
      cfg_(drafter_config(file_, hp_, target_->hparams())),
      w_(load_ds4_drafter_blocks(file_, hp_, target_->weights())),
      act_(target_->backend(), hp_, cfg_.block_size),
      runner_(target_->backend(), hp_, clock_) {
    const int64_t E = hp_.n_embd, V = hp_.n_vocab, R = cfg_.markov_rank, n_cap = cfg_.n_target_layers;
    WeightTable& t = w_.table;
    fc_ = load_weight_view(file_, t, "dflash.fc.weight", {n_cap * E, E}, false);
    hidden_norm_ = load_weight_view(file_, t, "dflash.hidden_norm.weight", {E}, true);
    markov_w1_ = load_weight_view(file_, t, "dflash.dspark.markov.w1", {R, V}, false);
    markov_w2_ = load_weight_view(file_, t, "dflash.dspark.markov.w2", {R, V}, false);
    const bool has_w = file_.find_tensor("dflash.dspark.confidence.weight") != nullptr;
    const bool has_b = file_.find_tensor("dflash.dspark.confidence.bias") != nullptr;
    if (has_w != has_b) {
        throw FormatError(file_.path() + ": tensor '" +
                          std::string(has_w ? "dflash.dspark.confidence.bias" : "dflash.dspark.confidence.weight") +
                          "' is missing (the confidence head needs both weight and bias)");
    }
    if (has_w && cfg_.confidence_dim == 0) {
        throw FormatError(file_.path() + ": GGUF key '" + std::string(kArchDrafter) +
                          ".dflash.dspark.confidence_dim' is missing but the file has a confidence head");
    }
    if (!has_w) cfg_.confidence_dim = 0;
    if (cfg_.confidence_dim) {
        conf_w_ = load_weight_view(file_, t, "dflash.dspark.confidence.weight", {cfg_.confidence_dim, 1}, false);
        WeightView b = load_weight_view(file_, t, "dflash.dspark.confidence.bias", {1}, true);
        dequantize_row(b.type, b.row(0), &conf_b_, 1, b.name.c_str());  // one value, read once (as Lucebox)
    }
    rope_.n_rot = hp_.n_rot;  // ratio 0: plain RoPE at rope.freq_base, no YaRN (Lucebox build_dspark_attention)
    rope_.freq_base = hp_.rope_freq_base;

    // Binding the joined table re-binds the target's views under their own ids (same
    // values), so the target's sessions keep working. Not safe while one of them computes.
    static std::atomic<uint64_t> next_serial{1};
    serial_ = next_serial++;
    target_->bind_extension(t, serial_);
    Backend& be = target_->backend();

    const int64_t W = max_context(), B = cfg_.block_size, D = hp_.head_dim;
    auto floats = [&](int64_t n) {
        bufs_.push_back(be.alloc((size_t)std::max<int64_t>(n, 1) * sizeof(float)));
        return bufs_.back()->as<float>();
    };
    feat_ = floats(W * n_cap * E);
    main_x_ = floats(W * E);
    K_ = floats((W + B) * D);
    pre_ = floats(B * E);
    logits_ = floats(B * V);
    w1row_ = floats(R);
    bias_ = floats(V);
    conf_in_ = floats(E + R);
    conf_ = floats(B);
    chain_vals_ = floats(B);
    bufs_.push_back(be.alloc((size_t)(B + 1) * sizeof(int32_t)));
    chain_ids_ = bufs_.back()->as<int32_t>();
}

Ds4Proposal Ds4Drafter::propose(const float* features, int64_t n_ctx, int32_t seed, int64_t pos, bool want_logits,
                                int64_t candidates) {
    const int64_t E = hp_.n_embd, V = hp_.n_vocab, HC = hp_.n_hc, H = hp_.n_head, D = hp_.head_dim;
    const int64_t R = cfg_.markov_rank, B = cfg_.block_size, F = cfg_.n_target_layers * E;
    if (n_ctx < 0 || pos < 0) throw ArgumentError("propose: n_ctx and pos must be >= 0");
    if (n_ctx > pos) {
        throw ArgumentError("propose: " + std::to_string(n_ctx) + " feature rows end at position " +
                            std::to_string(pos - 1) + ", so some would lie before position 0");
    }
    if (seed < 0 || seed >= V) {
        throw ArgumentError("propose: seed token " + std::to_string(seed) + " is outside the vocabulary 0.." +
                            std::to_string(V - 1));
    }
    // The window: the last max_context() rows (Lucebox keeps n_swa = 128 columns).
    const int64_t C = std::min(n_ctx, max_context());
    const float* win = features + (n_ctx - C) * F;
    Backend& be = target_->backend();
    const Ds4Weights& tw = target_->weights();
    // Another drafter of this target bound its table since: ours again (its ids overlap ours).
    if (target_->bound_extension() != serial_) target_->bind_extension(w_.table, serial_);

    // main_x = N_hidden_norm(W_fc N(F)) per context row. The unweighted N(F) first is
    // Lucebox's (deepseek4_graph.cpp, "pre-normalizing the features"): equal in exact
    // arithmetic since the hidden norm follows, and it keeps W_fc's input O(1).
    if (C) {
        be.upload(feat_, win, C * F);
        be.rms_norm(feat_, nullptr, F, C, hp_.rms_eps, feat_);
        be.matmul(fc_, 0, E, feat_, F, (int)C, main_x_, E);
        be.rms_norm(main_x_, &hidden_norm_, E, C, hp_.rms_eps, main_x_);
    }

    // The block [seed, MASK x (B-1)] through the target's token embedding, at pos .. pos+B-1.
    std::vector<int32_t> block(B, cfg_.mask_token_id);
    block[0] = seed;
    be.upload(act_.tokens, block.data(), B);
    runner_.embed(tw, act_, B);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Ds4LayerWeights& lw = w_.layers[(size_t)il];
        runner_.attn_project(lw, act_, B);  // Q, kv of the block rows (HC-pre, attn_norm, ...)
        runner_.attn_norms(lw, act_, B);
        // Context K rows: each layer's own N_kv_a_norm(W_kv main_x), no attn_norm (Lucebox
        // build_dspark_attention: kv_c from main_x directly), RoPE at their absolute
        // positions pos - C ..; then the block's rows. No FP8 rounding, no F16 store (Lucebox
        // attends over the float rows); no compressor, no indexer.
        if (C) {
            be.matmul(lw.attn_kv, 0, D, main_x_, E, (int)C, K_, D);
            be.rms_norm(K_, &lw.attn_kv_a_norm, D, C, hp_.rms_eps, K_);
            be.rope_tail(K_, C, 1, D, pos - C, rope_, false);
        }
        be.rope_tail(act_.Q, B, H, D, pos, rope_, false);
        be.rope_tail(act_.kv, B, 1, D, pos, rope_, false);
        be.copy(K_ + C * D, act_.kv, B * D);
        be.attention_rows(act_.Q, B, H, D, K_, C + B, lw.attn_sinks, rope_, pos, act_.O);
        runner_.attn_output(lw, act_, B);
        runner_.ffn(lw, il, act_, B);
    }

    // Head: the HC collapse (pre_, the confidence head's input: Lucebox feeds it the state
    // before output_norm), then output_norm and the target's LM head.
    be.hc_head(act_.X, B, HC, E, w_.output_hc_fn, w_.output_hc_scale, w_.output_hc_base, hp_.hc_eps, hp_.rms_eps,
               pre_);
    be.rms_norm(pre_, &w_.output_norm, E, B, hp_.rms_eps, act_.e);
    be.matmul(tw.output, 0, V, act_.e, E, (int)B, logits_, V);

    // Markov head, a greedy chain (Lucebox dspark_head.cpp, build_markov_chain_graph, and
    // deepseek4_dspark_spec.cpp: "Reference predicts token i+1 from block slot i"): candidate
    // i uses block row i (row 0 is the seed's), prev_0 = seed, prev_i = candidate i-1;
    // logits_i = lm_head(h_i) + W2 . W1[prev_i], candidate i = their argmax (ties: lower id).
    // The chain is sequential through the argmax, and it stays on the backend: row_top_k
    // writes candidate i where the next embed reads it, so nothing comes back until the end.
    const int64_t M = candidates > 0 && candidates < B ? candidates : B;
    be.upload(chain_ids_, &seed, 1);
    for (int64_t i = 0; i < M; ++i) {
        be.embed(markov_w1_, Dev<const int32_t>(chain_ids_ + i), 1, 1, w1row_);  // W1[prev_i]: markov_rank values
        be.matmul(markov_w2_, 0, V, w1row_, R, 1, bias_, V);
        be.add(logits_ + i * V, bias_, V);
        be.row_top_k(logits_ + i * V, 1, V, 1, chain_ids_ + (i + 1), chain_vals_ + i);
        if (cfg_.confidence_dim) {
            // confidence_i = sigmoid(conf . [h_pre_i; W1[prev_i]] + b) (or on h_pre_i alone).
            be.copy(conf_in_, pre_ + i * E, E);
            if (cfg_.confidence_dim > E) be.copy(conf_in_ + E, w1row_, R);
            be.matmul(conf_w_, 0, 1, conf_in_, cfg_.confidence_dim, 1, conf_ + i, 1);
        }
    }
    Ds4Proposal out;
    out.tokens.resize((size_t)M);
    be.download(out.tokens.data(), Dev<const int32_t>(chain_ids_ + 1), M);
    if (want_logits) {
        out.logits.resize((size_t)(M * V));
        be.download(out.logits.data(), Dev<const float>(logits_), M * V);
    }
    if (cfg_.confidence_dim) {
        out.confidence.resize((size_t)M);
        be.download(out.confidence.data(), Dev<const float>(conf_), M);
    }
    be.synchronize();
    for (float& c : out.confidence) {
        const double z = (double)c + (double)conf_b_;
        c = (float)(1.0 / (1.0 + std::exp(-z)));
    }
    return out;
}

}  // namespace ds4
