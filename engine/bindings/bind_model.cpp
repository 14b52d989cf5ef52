// Python view of the DeepSeek V4 model and its sessions (no engine logic here).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "array_out.h"
#include "bindings.h"
#include "common/error.h"
#include "model/ds4_model.h"
#include "backend/cpu/attn_kernels.h"
#include "backend/cpu/cpu_numerics.h"
#include "model/ds4_session.h"

namespace {

// Token ids arrive as Python ints of any size; anything outside int32 is reported
// as the bad token it is (the session then names the vocabulary limit).
std::vector<int32_t> token_ids(const std::vector<int64_t>& tokens) {
    std::vector<int32_t> out;
    out.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < INT32_MIN || tokens[i] > INT32_MAX) {
            throw ds4::ArgumentError("token id " + std::to_string(tokens[i]) + " (at index " + std::to_string(i) +
                                     ") is outside the 32-bit range of token ids");
        }
        out.push_back((int32_t)tokens[i]);
    }
    return out;
}

py::dict hparams_dict(const ds4::Ds4Hparams& hp) {
    py::dict d;
    d["n_layer"] = hp.n_layer;
    d["n_embd"] = hp.n_embd;
    d["n_vocab"] = hp.n_vocab;
    d["n_head"] = hp.n_head;
    d["n_head_kv"] = hp.n_head_kv;
    d["head_dim"] = hp.head_dim;
    d["n_rot"] = hp.n_rot;
    d["q_lora_rank"] = hp.q_lora_rank;
    d["o_lora_rank"] = hp.o_lora_rank;
    d["o_groups"] = hp.o_groups;
    d["n_expert"] = hp.n_expert;
    d["n_expert_used"] = hp.n_expert_used;
    d["n_expert_shared"] = hp.n_expert_shared;
    d["n_ff_exp"] = hp.n_ff_exp;
    d["n_hash_layers"] = hp.n_hash_layers;
    d["expert_weights_scale"] = hp.expert_weights_scale;
    d["expert_weights_norm"] = hp.expert_weights_norm;
    d["expert_gating_func"] = hp.expert_gating_func;
    d["n_swa"] = hp.n_swa;
    d["idx_n_head"] = hp.idx_n_head;
    d["idx_head_dim"] = hp.idx_head_dim;
    d["idx_top_k"] = hp.idx_top_k;
    d["n_hc"] = hp.n_hc;
    d["sinkhorn_iters"] = hp.sinkhorn_iters;
    d["hc_eps"] = hp.hc_eps;
    d["rms_eps"] = hp.rms_eps;
    d["rope_freq_base"] = hp.rope_freq_base;
    d["compress_rope_freq_base"] = hp.compress_rope_freq_base;
    d["yarn_factor"] = hp.yarn_factor;
    d["yarn_beta_fast"] = hp.yarn_beta_fast;
    d["yarn_beta_slow"] = hp.yarn_beta_slow;
    d["yarn_orig_ctx"] = hp.yarn_orig_ctx;
    d["swiglu_clamp_exp"] = hp.swiglu_clamp_exp;
    d["swiglu_clamp_shexp"] = hp.swiglu_clamp_shexp;
    d["compress_ratios"] = hp.compress_ratios;
    return d;
}

}  // namespace

using F32In = py::array_t<float, py::array::c_style | py::array::forcecast>;
using F64In = py::array_t<double, py::array::c_style | py::array::forcecast>;

// Key rows of a (T, n) float32 array as the row pointers the attention kernels take.
static std::vector<const float*> key_rows(const F32In& keys, int64_t n) {
    if (keys.ndim() != 2 || keys.shape(1) != n) throw ds4::ArgumentError("keys must be (T, n) with n the query size");
    std::vector<const float*> rows((size_t)keys.shape(0));
    for (size_t t = 0; t < rows.size(); ++t) rows[t] = keys.data() + (int64_t)t * n;
    return rows;
}

// The attention kernels this process dispatched to (attn_kernels.h), so tests can
// compare their bits across DS4KIT_CPU_FEATURES levels.
static void bind_attn_kernels(py::module_& m) {
    m.def("_attn_kernels_name", []() { return std::string(ds4::attn_kernels().name); });
    m.def("_attn_dot", [](const F64In& q, const F32In& k) {
        if (q.ndim() != 1 || k.ndim() != 1 || q.size() != k.size()) throw ds4::ArgumentError("q and k: same length");
        return ds4::attn_kernels().dot(q.data(), k.data(), q.size());
    });
    m.def("_attn_weighted_sum", [](const F64In& e, const F32In& keys) {
        if (e.ndim() != 1 || keys.ndim() != 2 || keys.shape(0) != e.size()) throw ds4::ArgumentError("e: one weight per key");
        const int64_t n = keys.shape(1);
        const auto rows = key_rows(keys, n);
        py::array_t<double> o(n);
        ds4::attn_kernels().weighted_sum(e.data(), rows.data(), e.size(), n, o.mutable_data());
        return o;
    });
    m.def("_attn_scores4", [](const F64In& q, const F32In& keys) {  // q (nh <= 4, n) -> (nh, T)
        if (q.ndim() != 2 || q.shape(0) < 1 || q.shape(0) > 4) throw ds4::ArgumentError("q must be (1..4, n)");
        const int64_t nh = q.shape(0), n = q.shape(1);
        const auto rows = key_rows(keys, n);
        const int64_t T = (int64_t)rows.size();
        py::array_t<double> s({(py::ssize_t)nh, (py::ssize_t)T});
        ds4::attn_kernels().scores4(q.data(), (int)nh, rows.data(), T, n, s.mutable_data());
        return s;
    });
    m.def("_attn_weighted_sums4", [](const F64In& e, const F32In& keys) {  // e (nh <= 4, T) -> (nh, n)
        if (e.ndim() != 2 || e.shape(0) < 1 || e.shape(0) > 4 || keys.ndim() != 2 || keys.shape(0) != e.shape(1)) {
            throw ds4::ArgumentError("e must be (1..4, T) for T keys");
        }
        const int64_t nh = e.shape(0), T = e.shape(1), n = keys.shape(1);
        const auto rows = key_rows(keys, n);
        py::array_t<double> o({(py::ssize_t)nh, (py::ssize_t)n});
        ds4::attn_kernels().weighted_sums4(e.data(), (int)nh, rows.data(), T, n, o.mutable_data());
        return o;
    });
}

// The CPU backend's scalar numerics, exposed (underscore names) so tests can check them
// element by element against the float64 reference and numpy.
static void bind_numerics(py::module_& m) {
    auto copy = [](const F32In& x) {
        py::array_t<float> out(x.size());
        std::copy(x.data(), x.data() + x.size(), out.mutable_data());
        return out;
    };
    m.def("_fp8_e4m3_round_trip", [copy](const F32In& x) {
        auto out = copy(x);
        ds4::fp8_e4m3_round_trip(out.mutable_data(), out.size());
        return out;
    });
    m.def("_fp4_e2m1_round_trip", [copy](const F32In& x) {
        if (x.size() % 32) throw ds4::ArgumentError("FP4 round trip needs a multiple of 32 values");
        auto out = copy(x);
        ds4::fp4_e2m1_round_trip(out.mutable_data(), out.size());
        return out;
    });
    m.def("_f32_to_f16_bits", [](const F32In& x) {
        py::array_t<uint16_t> out(x.size());
        for (py::ssize_t i = 0; i < x.size(); ++i) out.mutable_data()[i] = ds4::f32_to_f16(x.data()[i]);
        return out;
    });
    m.def("_hadamard", [](const std::vector<double>& x) {
        if (x.empty() || (x.size() & (x.size() - 1))) throw ds4::ArgumentError("Hadamard needs a power-of-two length");
        std::vector<double> y(x);
        ds4::hadamard_inplace(y.data(), (int64_t)y.size());
        return y;
    });
    m.def("_rope_angles", [](double pos, int64_t n_rot, double base, double freq_scale, double ext_factor,
                             int64_t n_ctx_orig, double beta_fast, double beta_slow) {
        ds4::RopeSpec r;
        r.n_rot = n_rot;
        r.freq_base = base;
        r.freq_scale = freq_scale;
        r.ext_factor = ext_factor;
        r.n_ctx_orig = n_ctx_orig;
        r.beta_fast = beta_fast;
        r.beta_slow = beta_slow;
        return ds4::rope_angles(pos, r);
    });
    bind_attn_kernels(m);
}

void bind_model(py::module_& m) {
    bind_numerics(m);
    m.def(
        "read_hparams",
        [](const ds4::GGUFFile& f, const std::string& arch) { return hparams_dict(ds4::read_ds4_hparams(f, arch)); },
        py::arg("gguf"), py::arg("arch") = ds4::kArchTarget,
        "DeepSeek V4 hyperparameters of a GGUF under `<arch>.` ('deepseek4' or 'deepseek4-dflash-draft')");
    m.attr("MAX_REWIND") = ds4::Ds4Session::kMaxRewind;  // positions Session.rewind can reach back
    m.def("available_backends", &ds4::available_backends,
          "[(name, 'ok' or why this build or machine cannot run it)] for cpu, cuda, hip");
    m.def(
        "device_limits",
        [](const std::string& kind, uint64_t array_bytes, int passes) {
            const ds4::DeviceLimits l = ds4::measure_device_limits(kind, array_bytes, passes);
            py::dict d;
            d["device"] = l.device, d["arch"] = l.arch, d["multiprocessors"] = l.multiprocessors;
            d["l2_bytes"] = l.l2_bytes, d["total_bytes"] = l.total_bytes, d["array_bytes"] = l.array_bytes;
            d["passes"] = l.passes, d["read_bytes_per_s"] = l.read_bytes_per_s;
            d["copy_bytes_per_s"] = l.copy_bytes_per_s;
            return d;
        },
        py::arg("kind"), py::arg("array_bytes") = (uint64_t)1 << 30, py::arg("passes") = 5,
        "The GPU's memory bandwidth (bench engine's limit on the GPU backend): a read and a copy kernel over "
        "arrays of at least array_bytes and 8x the L2, best of `passes`; kind 'cuda' or 'hip' (the built one)");
    using ds4::Ds4Model;
    using ds4::Ds4Session;
    py::class_<ds4::Ds4Snapshot>(m, "Snapshot", "A session's state at one position (Session.snapshot)")
        .def_property_readonly("pos", [](const ds4::Ds4Snapshot& s) { return s.pos; })
        .def_property_readonly("bytes", [](const ds4::Ds4Snapshot& s) { return s.state ? s.state->bytes() : 0; })
        .def_property_readonly("max_ctx", [](const ds4::Ds4Snapshot& s) { return s.max_ctx; })
        .def_property_readonly("fp8_kv", [](const ds4::Ds4Snapshot& s) { return s.fp8_kv; })
        .def_property_readonly("indexer_fp4", [](const ds4::Ds4Snapshot& s) { return s.indexer_fp4; })
        .def_property_readonly("tokens", [](const ds4::Ds4Snapshot& s) { return s.tokens; })
        .def(
            "image",
            [](const ds4::Ds4Snapshot& s) {
                ds4::SeqStateImage img = s.state->to_image();
                py::list arrays;
                for (std::vector<float>& a : img.arrays) {
                    const auto n = (py::ssize_t)a.size();
                    arrays.append(to_array(std::move(a), {n}));
                }
                py::dict d;
                d["pos"] = img.pos;
                d["hwm"] = img.hwm;
                d["arrays"] = arrays;
                return d;
            },
            "The state's arrays on the host: {pos, hwm, arrays: [float32 1-D arrays in the backend's order]}");
    py::class_<Ds4Session>(m, "Session", "Sequential state of one sequence (ring, compressed rows, position)")
        .def_property_readonly("pos", &Ds4Session::pos)
        .def_property_readonly("max_ctx", &Ds4Session::max_ctx)
        .def_property_readonly("fp8_kv", [](const Ds4Session& s) { return s.options().fp8_kv; })
        .def_property_readonly("indexer_fp4", [](const Ds4Session& s) { return s.options().indexer_fp4; })
        .def("snapshot", &Ds4Session::snapshot, py::call_guard<py::gil_scoped_release>(),
             "A deep copy of the state after the tokens fed so far")
        .def("restore", &Ds4Session::restore, py::arg("snapshot"), py::call_guard<py::gil_scoped_release>(),
             "Return to a snapshot of this session (or of another session of the same model and options)")
        .def("rewind", &Ds4Session::rewind, py::arg("n"), py::call_guard<py::gil_scoped_release>(),
             "Take back the last n positions (n <= max_rewind), at a cost independent of the context")
        .def_property_readonly("max_rewind", &Ds4Session::max_rewind,
                               "How many positions rewind() can take back now")
        .def_property_readonly("tokens", &Ds4Session::tokens, "Token ids fed so far (positions 0 .. pos-1)")
        .def_property_readonly("capture_layers", [](const Ds4Session& s) { return s.options().capture_layers; })
        .def_property_readonly("capture_at",
                               [](const Ds4Session& s) { return s.options().capture_input ? "input" : "output"; })
        .def(
            "captured",
            [](const Ds4Session& s) {
                const auto n_cap = (py::ssize_t)s.options().capture_layers.size();
                const auto E = (py::ssize_t)s.model().hparams().n_embd;
                std::vector<float> copy(s.captured());
                const py::ssize_t rows = n_cap ? (py::ssize_t)copy.size() / (n_cap * E) : 0;
                return to_array(std::move(copy), {rows, n_cap, E});
            },
            "Features of the last call's tokens: float32 [tokens, capture layers, n_embd]")
        .def_property_readonly("state_bytes", &Ds4Session::state_bytes,
                               "Bytes of sequence state (ring, compressed and indexer rows) the backend holds")
        .def_property(
            "profile", [](Ds4Session& s) { return s.phase_clock().enabled; },
            [](Ds4Session& s, bool on) { s.phase_clock().enabled = on; },
            "Accumulate per-phase wall-clock seconds of every forward (also on with DS4KIT_PROFILE=1)")
        .def(
            "phase_seconds",
            [](Ds4Session& s, bool reset) {
                py::dict d;
                ds4::PhaseClock& c = s.phase_clock();
                for (int i = 0; i < (int)ds4::Phase::count; ++i) {
                    d[ds4::phase_name((ds4::Phase)i)] = c.seconds[(size_t)i];
                }
                if (reset) c.reset();
                return d;
            },
            py::arg("reset") = false, "Seconds per forward phase since the last reset (zeros unless profile is on)")
        .def(
            "decode",
            [](Ds4Session& s, int64_t token) {
                const int32_t id = token_ids({token})[0];
                std::vector<float> out;
                {
                    py::gil_scoped_release nogil;
                    out = s.decode(id);
                }
                const auto n = (py::ssize_t)out.size();
                return to_array(std::move(out), {n});
            },
            py::arg("token"), "Logits (float32 [n_vocab]) of one token")
        .def(
            "verify",
            [](Ds4Session& s, const std::vector<int64_t>& tokens64) {
                const std::vector<int32_t> tokens = token_ids(tokens64);
                std::vector<float> out;
                {
                    py::gil_scoped_release nogil;
                    out = s.verify(tokens);
                }
                const auto q = (py::ssize_t)tokens.size();
                const auto v = (py::ssize_t)(out.size() / tokens.size());
                return to_array(std::move(out), {q, v});
            },
            py::arg("tokens"), "Logits of every token (float32 [q, n_vocab]); rows equal one-by-one decode")
        .def(
            "decode_top",
            [](Ds4Session& s, int64_t token, int64_t k) {
                const int32_t id = token_ids({token})[0];
                Ds4Session::TopK top;
                {
                    py::gil_scoped_release nogil;
                    top = s.decode_top(id, k);
                }
                return py::make_tuple(to_array(std::move(top.ids), {(py::ssize_t)k}),
                                      to_array(std::move(top.vals), {(py::ssize_t)k}));
            },
            py::arg("token"), py::arg("k") = 1,
            "Feeds one token like decode; returns (ids int32 [k], values float32 [k]): its k best logits, "
            "largest first, ties to the lower id, found on the backend (only these come back)")
        .def(
            "decode_greedy",
            [](Ds4Session& s, int64_t token, int64_t n) {
                const int32_t id = token_ids({token})[0];
                std::vector<int32_t> ids;
                {
                    py::gil_scoped_release nogil;
                    ids = s.decode_greedy(id, n);
                }
                return to_array(std::move(ids), {(py::ssize_t)n});
            },
            py::arg("token"), py::arg("n"),
            "Greedy decoding of n steps without the host between them: feeds token, then each step's argmax "
            "(decode_top's) to the next; returns the n argmaxes (int32 [n]). The session has fed token and the "
            "first n - 1 of them; a caller stopping at id i rewinds n - 1 - i. 1 <= n <= 32")
        .def(
            "verify_top",
            [](Ds4Session& s, const std::vector<int64_t>& tokens64, int64_t k) {
                const std::vector<int32_t> tokens = token_ids(tokens64);
                Ds4Session::TopK top;
                {
                    py::gil_scoped_release nogil;
                    top = s.verify_top(tokens, k);
                }
                const auto q = (py::ssize_t)tokens.size();
                return py::make_tuple(to_array(std::move(top.ids), {q, (py::ssize_t)k}),
                                      to_array(std::move(top.vals), {q, (py::ssize_t)k}));
            },
            py::arg("tokens"), py::arg("k") = 1,
            "Feeds tokens like verify; returns (ids int32 [q, k], values float32 [q, k]), each row as decode_top")
        .def(
            "prefill",
            [](Ds4Session& s, const std::vector<int64_t>& tokens64, const std::string& mode,
               py::object should_stop) -> py::object {
                const std::vector<int32_t> tokens = token_ids(tokens64);
                if (mode != "exact" && mode != "batched") {
                    throw ds4::ArgumentError("prefill mode '" + mode + "' is not one of 'exact', 'batched'");
                }
                std::vector<float> out;
                {
                    py::gil_scoped_release nogil;
                    // Between blocks: run Python's signal handlers (a second Ctrl-C raises) and ask
                    // should_stop, so a long prefill stops within one block of a request.
                    out = s.prefill(tokens, mode == "exact", [&should_stop] {
                        py::gil_scoped_acquire gil;
                        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
                        return !should_stop.is_none() && should_stop().cast<bool>();
                    });
                }
                if (out.empty()) return py::none();  // stopped on request
                const auto n = (py::ssize_t)out.size();
                return to_array(std::move(out), {n});
            },
            py::arg("tokens"), py::arg("mode") = "exact", py::arg("should_stop") = py::none(),
            "Feeds tokens; logits (float32 [n_vocab]) of the last, or None if should_stop() "
            "turned true between two blocks (the blocks fed so far stay fed)");

    py::class_<Ds4Model, std::shared_ptr<Ds4Model>>(m, "Model", "A deepseek4 GGUF, memory-mapped once, on one backend")
        .def(py::init([](const std::string& path, int threads, const std::string& backend) {
                 py::gil_scoped_release nogil;
                 return std::make_shared<Ds4Model>(path, threads, backend);
             }),
             py::arg("path"), py::arg("threads") = 0, py::arg("backend") = "cpu",
             "backend: 'cpu', 'cuda', 'hip' or 'auto' (UnsupportedError names the build switch of one not built)")
        .def_property_readonly("path", &Ds4Model::path)
        .def_property_readonly("hparams", [](const Ds4Model& md) { return hparams_dict(md.hparams()); })
        .def_property_readonly("backend", [](const Ds4Model& md) { return md.backend().name(); })
        .def_property_readonly("backend_kind", [](const Ds4Model& md) { return md.backend().kind(); })
        .def(
            "backend_counters",
            [](const Ds4Model& md) {
                py::dict d;
                for (const auto& kv : md.backend().counters()) d[py::str(kv.first)] = kv.second;
                return d;
            },
            "Counts the backend keeps (a GPU's step graphs: steps issued, recorded, replayed); empty for the CPU")
        .def_property_readonly("threads", [](const Ds4Model& md) { return md.backend().n_threads(); })
        .def_property_readonly(
            "file_resident_bytes", [](const Ds4Model& md) { return md.file().bytes()->resident_bytes(); },
            "Bytes of the mapped GGUF resident in this process now (mincore); a GPU backend drops them after upload")
        .def(
            "snapshot_from_image",
            [](std::shared_ptr<Ds4Model> md, int64_t max_ctx, bool fp8_kv, bool indexer_fp4, int64_t pos, int64_t hwm,
               const std::vector<int64_t>& tokens64, const std::vector<F32In>& arrays) {
                ds4::Ds4SessionOptions opt;
                opt.max_ctx = max_ctx;
                opt.fp8_kv = fp8_kv;
                opt.indexer_fp4 = indexer_fp4;
                ds4::SeqStateImage img;
                img.pos = pos;
                img.hwm = hwm;
                for (const F32In& a : arrays) img.arrays.emplace_back(a.data(), a.data() + a.size());
                return ds4::snapshot_from_image(md, opt, img, token_ids(tokens64));
            },
            py::arg("max_ctx"), py::arg("fp8_kv"), py::arg("indexer_fp4"), py::arg("pos"), py::arg("hwm"),
            py::arg("tokens"), py::arg("arrays"),
            "A Snapshot of this model rebuilt from Snapshot.image() values (a snapshot file)")
        .def_property_readonly("gguf", &Ds4Model::file, py::return_value_policy::reference_internal,
                               "The GGUF file the model computes on (the same mapping)")
        .def_property_readonly("tokenizer", &Ds4Model::tokenizer, py::return_value_policy::reference_internal,
                               "The tokenizer built from the file's tokenizer.ggml.* metadata")
        .def(
            "session",
            [](std::shared_ptr<Ds4Model> md, int64_t max_ctx, bool fp8_kv, bool indexer_fp4,
               const std::vector<int64_t>& capture_layers, const std::string& capture_at) {
                if (capture_at != "input" && capture_at != "output") {
                    throw ds4::ArgumentError("capture_at '" + capture_at + "' is not one of 'input', 'output'");
                }
                ds4::Ds4SessionOptions opt;
                opt.max_ctx = max_ctx;
                opt.fp8_kv = fp8_kv;
                opt.indexer_fp4 = indexer_fp4;
                opt.capture_layers = capture_layers;
                opt.capture_input = capture_at == "input";
                return std::make_unique<Ds4Session>(std::move(md), opt);
            },
            py::arg("max_ctx"), py::arg("fp8_kv") = true, py::arg("indexer_fp4") = true,
            py::arg("capture_layers") = std::vector<int64_t>{}, py::arg("capture_at") = "output",
            "capture_layers: layers whose HC-stream mean (at their 'input' or 'output') each forward records");
}
