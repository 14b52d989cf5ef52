#include "model/ds4_weights.h"

#include <cstring>
#include <initializer_list>

#include "common/error.h"
#include "gguf/gguf_file.h"
#include "quant/quant_dot.h"
#include "quant/quant_types.h"

namespace ds4 {

namespace {

constexpr uint32_t kTypeI32 = 26;

std::string shape_str(std::initializer_list<int64_t> dims) {
    std::string s = "[";
    for (int64_t d : dims) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
    return s + "]";
}

std::string shape_str(const std::vector<uint64_t>& ne) {
    std::string s = "[";
    for (uint64_t d : ne) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
    return s + "]";
}

class Loader {
public:
    Loader(const GGUFFile& f, WeightTable& table) : f_(f), table_(table) {}

    // Expected shape in ggml ne order. Trailing 1s in the file are tolerated (a
    // [4] vector may be stored as [4, 1]). The view joins the table under a new id.
    WeightView get(const std::string& name, std::initializer_list<int64_t> shape) {
        WeightView w = view(name, shape);
        w.id = (int32_t)table_.views.size();
        table_.views.push_back(w);
        return w;
    }

    // A small weight-like table that backends keep as floats.
    WeightView vec(const std::string& name, std::initializer_list<int64_t> shape) {
        WeightView w = view(name, shape);
        w.vector = true;
        w.id = (int32_t)table_.views.size();
        table_.views.push_back(w);
        return w;
    }

    WeightView get_i32(const std::string& name, std::initializer_list<int64_t> shape) {
        WeightView w = get(name, shape);
        if (w.type != kTypeI32) {
            const QTypeTraits* tr = qtype_traits(w.type);
            throw FormatError(f_.path() + ": tensor '" + name + "' has type " + (tr ? tr->name : std::to_string(w.type)) +
                              ", expected I32");
        }
        return w;
    }

private:
    WeightView view(const std::string& name, std::initializer_list<int64_t> shape) const {
        const GGUFTensorInfo* t = f_.find_tensor(name);
        if (!t) throw FormatError(f_.path() + ": tensor '" + name + "' is missing (expected shape " + shape_str(shape) + ")");
        std::vector<int64_t> want(shape);
        bool ok = t->ne.size() >= want.size();
        for (size_t i = 0; ok && i < t->ne.size(); ++i) {
            const int64_t expect = i < want.size() ? want[i] : 1;
            ok = (int64_t)t->ne[i] == expect;
        }
        if (!ok) {
            throw FormatError(f_.path() + ": tensor '" + name + "' has shape " + shape_str(t->ne) + ", expected " +
                              shape_str(shape));
        }
        WeightView w;
        w.name = name;
        w.type = t->type_id;
        w.data = t->data;
        for (size_t i = 0; i < t->ne.size() && i < 4; ++i) w.ne[i] = (int64_t)t->ne[i];
        if (t->type_id == kTypeI32) {
            w.row_bytes = (uint64_t)w.ne[0] * 4;
        } else {
            // Validates that the engine can compute with this type (UnsupportedError names the tensor).
            w.row_bytes = quant_check_row(t->type_id, w.ne[0], name.c_str());
        }
        return w;
    }

    const GGUFFile& f_;
    WeightTable& table_;
};

// Every token's hash-routed experts must exist; checked once at load so a bad
// table never fails half-way through a forward pass.
void check_expert_ids(const GGUFFile& f, const WeightView& table, int64_t n_expert) {
    for (int64_t tok = 0; tok < table.n_rows(); ++tok) {
        for (int64_t k = 0; k < table.ne[0]; ++k) {
            int32_t id;
            std::memcpy(&id, table.row(tok) + 4 * k, 4);
            if (id < 0 || id >= n_expert) {
                throw FormatError(f.path() + ": tensor '" + table.name + "' maps token " + std::to_string(tok) +
                                  " to expert " + std::to_string(id) + ", outside 0.." + std::to_string(n_expert - 1));
            }
        }
    }
}

}  // namespace

namespace {

// Everything but token_embd and output (which a drafter takes from its target).
void load_blocks_and_head(const GGUFFile& f, const Ds4Hparams& hp, Ds4Weights& w) {
    Loader L(f, w.table);
    const int64_t E = hp.n_embd, V = hp.n_vocab, H = hp.n_head, D = hp.head_dim, HC = hp.n_hc;
    const int64_t n_mix = (2 + HC) * HC;
    w.output_norm = L.vec("output_norm.weight", {E});
    w.output_hc_fn = L.get("output_hc_fn.weight", {HC * E, HC});
    w.output_hc_base = L.vec("output_hc_base.weight", {HC});
    w.output_hc_scale = L.vec("output_hc_scale.weight", {1});
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        Ds4LayerWeights l;
        l.ratio = hp.compress_ratios[(size_t)il];
        l.attn_norm = L.vec(b + "attn_norm.weight", {E});
        l.attn_q_a = L.get(b + "attn_q_a.weight", {E, hp.q_lora_rank});
        l.attn_q_a_norm = L.vec(b + "attn_q_a_norm.weight", {hp.q_lora_rank});
        l.attn_q_b = L.get(b + "attn_q_b.weight", {hp.q_lora_rank, H * D});
        l.attn_kv = L.get(b + "attn_kv.weight", {E, D});
        l.attn_kv_a_norm = L.vec(b + "attn_kv_a_norm.weight", {D});
        l.attn_sinks = L.vec(b + "attn_sinks.weight", {H});
        l.attn_output_a = L.get(b + "attn_output_a.weight", {H * D / hp.o_groups, hp.o_lora_rank * hp.o_groups});
        l.attn_output_b = L.get(b + "attn_output_b.weight", {hp.o_groups * hp.o_lora_rank, E});
        l.hc_attn_fn = L.get(b + "hc_attn_fn.weight", {HC * E, n_mix});
        l.hc_attn_scale = L.vec(b + "hc_attn_scale.weight", {3});
        l.hc_attn_base = L.vec(b + "hc_attn_base.weight", {n_mix});
        l.hc_ffn_fn = L.get(b + "hc_ffn_fn.weight", {HC * E, n_mix});
        l.hc_ffn_scale = L.vec(b + "hc_ffn_scale.weight", {3});
        l.hc_ffn_base = L.vec(b + "hc_ffn_base.weight", {n_mix});
        l.ffn_norm = L.vec(b + "ffn_norm.weight", {E});
        l.ffn_gate_inp = L.get(b + "ffn_gate_inp.weight", {E, hp.n_expert});
        if (il < hp.n_hash_layers) {
            l.ffn_gate_tid2eid = L.get_i32(b + "ffn_gate_tid2eid.weight", {hp.n_expert_used, V});
            check_expert_ids(f, l.ffn_gate_tid2eid, hp.n_expert);
        } else {
            l.exp_probs_b = L.vec(b + "exp_probs_b.bias", {hp.n_expert});
        }
        l.ffn.gate_exps = L.get(b + "ffn_gate_exps.weight", {E, hp.n_ff_exp, hp.n_expert});
        l.ffn.up_exps = L.get(b + "ffn_up_exps.weight", {E, hp.n_ff_exp, hp.n_expert});
        l.ffn.down_exps = L.get(b + "ffn_down_exps.weight", {hp.n_ff_exp, E, hp.n_expert});
        l.ffn.gate_shexp = L.get(b + "ffn_gate_shexp.weight", {E, hp.n_ff_exp});
        l.ffn.up_shexp = L.get(b + "ffn_up_shexp.weight", {E, hp.n_ff_exp});
        l.ffn.down_shexp = L.get(b + "ffn_down_shexp.weight", {hp.n_ff_exp, E});
        if (l.ratio) {
            const int64_t r = l.ratio, C = (r == 4 ? 2 : 1) * D;
            l.comp_kv = L.get(b + "attn_compressor_kv.weight", {E, C});
            l.comp_gate = L.get(b + "attn_compressor_gate.weight", {E, C});
            l.comp_ape = L.vec(b + "attn_compressor_ape.weight", {C, r});
            l.comp_norm = L.vec(b + "attn_compressor_norm.weight", {D});
        }
        if (l.ratio == 4) {
            const int64_t di = hp.idx_head_dim;
            l.idx_q_b = L.get(b + "indexer.attn_q_b.weight", {hp.q_lora_rank, hp.idx_n_head * di});
            l.idx_proj = L.get(b + "indexer.proj.weight", {E, hp.idx_n_head});
            l.idx_comp_kv = L.get(b + "indexer_compressor_kv.weight", {E, 2 * di});
            l.idx_comp_gate = L.get(b + "indexer_compressor_gate.weight", {E, 2 * di});
            l.idx_comp_ape = L.vec(b + "indexer_compressor_ape.weight", {2 * di, 4});
            l.idx_comp_norm = L.vec(b + "indexer_compressor_norm.weight", {di});
        }
        w.layers.push_back(std::move(l));
    }
}

}  // namespace

Ds4Weights load_ds4_weights(const GGUFFile& f, const Ds4Hparams& hp) {
    Ds4Weights w;
    Loader L(f, w.table);
    w.token_embd = L.get("token_embd.weight", {hp.n_embd, hp.n_vocab});
    w.output = L.get("output.weight", {hp.n_embd, hp.n_vocab});
    load_blocks_and_head(f, hp, w);
    return w;
}

Ds4Weights load_ds4_drafter_blocks(const GGUFFile& f, const Ds4Hparams& hp, const Ds4Weights& target) {
    Ds4Weights w;
    w.table = target.table;
    w.token_embd = target.token_embd;
    w.output = target.output;
    load_blocks_and_head(f, hp, w);
    return w;
}

WeightView load_weight_view(const GGUFFile& f, WeightTable& table, const std::string& name,
                            std::initializer_list<int64_t> shape, bool vector) {
    Loader L(f, table);
    return vector ? L.vec(name, shape) : L.get(name, shape);
}

}  // namespace ds4
