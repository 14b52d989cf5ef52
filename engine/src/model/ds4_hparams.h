// Hyperparameters of a DeepSeek V4 GGUF (ds4-model.md section 1), read from the
// keys under `<arch>.` exactly as llama.cpp 0.3.36 names them: the target
// (`deepseek4`) and the DSpark drafter (`deepseek4-dflash-draft`, section 6)
// share the model keys under their own prefix. Every
// dimension comes from the file, so tiny synthetic models run the same code.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds4 {

class GGUFFile;

struct Ds4Hparams {
    int64_t n_layer = 0;
    int64_t n_embd = 0;
    int64_t n_vocab = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 1;
    int64_t head_dim = 0;          // attention.key_length (= value_length)
    int64_t n_rot = 0;             // RoPE dims: the last n_rot of every head
    int64_t q_lora_rank = 0;
    int64_t o_lora_rank = 0;
    int64_t o_groups = 0;
    int64_t n_expert = 0;
    int64_t n_expert_used = 0;
    int64_t n_expert_shared = 1;
    int64_t n_ff_exp = 0;
    int64_t n_hash_layers = 0;
    double expert_weights_scale = 1.0;
    bool expert_weights_norm = true;
    int64_t expert_gating_func = 0;
    int64_t n_swa = 0;             // raw window (ring) length
    int64_t idx_n_head = 0;
    int64_t idx_head_dim = 0;
    int64_t idx_top_k = 0;
    int64_t n_hc = 0;              // hyper-connection streams
    int64_t sinkhorn_iters = 0;
    double hc_eps = 0;
    double rms_eps = 0;
    double rope_freq_base = 0;
    double compress_rope_freq_base = 0;
    double yarn_factor = 1.0;
    double yarn_beta_fast = 32.0;
    double yarn_beta_slow = 1.0;
    int64_t yarn_orig_ctx = 0;
    std::vector<double> swiglu_clamp_exp;    // per layer
    std::vector<double> swiglu_clamp_shexp;  // per layer (defaults to swiglu_clamp_exp)
    std::vector<int64_t> compress_ratios;    // per layer: 0, 4 or 128
};

// llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SQRT_SOFTPLUS.
constexpr int64_t kGatingSqrtSoftplus = 4;

constexpr const char* kArchTarget = "deepseek4";
constexpr const char* kArchDrafter = "deepseek4-dflash-draft";

// Reads and checks every key under `<expected_arch>.` (general.architecture must
// name it); throws ds4::FormatError naming the file and the missing or bad key
// (and UnsupportedError for a structure DS4 does not have). Indexer and
// compressed-RoPE keys are required only when a layer has that ratio.
Ds4Hparams read_ds4_hparams(const GGUFFile& f, const std::string& expected_arch = kArchTarget);

}  // namespace ds4
