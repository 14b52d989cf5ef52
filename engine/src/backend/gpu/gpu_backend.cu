// GpuBackend: ds4::Backend on one CUDA or HIP device (device 0). Host code only: memory,
// the weight table, argument checks and kernel launches (gpu_kernels.h).
// Operations are enqueued on the main stream in issue order; upload, download and the kernels
// are asynchronous and synchronize() waits for all of them. One side stream (run_beside):
// hc_pre's Sinkhorn, which only hc_post reads, runs there beside the attention or experts
// between them, and moe's shared expert beside the routed ones (fork and join by events;
// download, synchronize and the next use of the scratch join it too). Every operation of the
// seam is here; a weight type without a kernel throws UnsupportedError naming the operation
// and the tensor (no silent CPU fallback).
//
// Threads: calls from several host threads (two sessions) enqueue on the one stream,
// which the runtime allows; each session's calls stay in its own issue order.
#include "backend/gpu/gpu_compat.h"

#if DS4_GPU_HOST_CODE
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/gpu/gpu_backend.h"
#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_runtime.h"
#include "backend/gpu/gpu_seq_state.h"
#include "backend/gpu/gpu_weights.h"
#include "quant/iq2xxs_grid.h"

namespace ds4 {

namespace {

constexpr uint32_t kTypeI32 = 26;
// hc_pre's Sinkhorn on a second stream, except on HIP-CPU, whose runtime works through its
// streams one after another and would wait forever on the fork event (the same kernels then run
// on the main stream, in the same order for each split, so nothing computed changes).
#if defined(__HIP_CPU_RT__)
constexpr bool kSideStream = false;
#else
constexpr bool kSideStream = true;
#endif

std::string kind_upper() { return DS4_GPU_KIND_NAME[0] == 'c' ? "CUDA" : "HIP"; }

class GpuBuffer final : public DeviceBuffer {
public:
    GpuBuffer(void* p, size_t n) : p_(p), n_(n) {}
    ~GpuBuffer() override {
        if (p_) (void)DS4_GPU_RT(Free)(p_);  // cannot throw here; a failed free means the context is gone
    }
    void* data() const override { return p_; }
    size_t bytes() const override { return n_; }

private:
    void* p_;
    size_t n_;
};

class GpuBackend final : public Backend {
public:
    explicit GpuBackend(int device) {
        DS4_GPU_CHECK(SetDevice, device);
        ds4_gpu_device_prop_t prop{};
        DS4_GPU_CHECK(GetDeviceProperties, &prop, device);
        name_ = std::string(DS4_GPU_KIND_NAME "(") + prop.name;
#if defined(__HIP_CPU_RT__)
        name_ += ", HIP-CPU";  // the test runtime: kernels run on the host
#elif defined(__HIPCC__)
        name_ += std::string(", ") + prop.gcnArchName;
#endif
        name_ += ")";
        DS4_GPU_CHECK(StreamCreateWithFlags, &stream_, ds4GpuStreamNonBlocking);
        // DS4KIT_GPU_SIDE_STREAM=0 keeps everything on the main stream (same bits: a measurement
        // of what the overlap buys).
        const char* side = std::getenv("DS4KIT_GPU_SIDE_STREAM");
        side_on_ = kSideStream && !(side && std::strcmp(side, "0") == 0);
        if (side_on_) {
            DS4_GPU_CHECK(StreamCreateWithFlags, &side_, ds4GpuStreamNonBlocking);
            DS4_GPU_CHECK(EventCreateWithFlags, &fork_, ds4GpuEventDisableTiming);
            DS4_GPU_CHECK(EventCreateWithFlags, &join_, ds4GpuEventDisableTiming);
        }
        // The IQ2_XXS codebook and the fault word live on the device for the kernels.
        auto g = alloc(sizeof(kIq2xxsGrid));
        DS4_GPU_CHECK(Memcpy, g->data(), kIq2xxsGrid, sizeof(kIq2xxsGrid), ds4GpuMemcpyHostToDevice);
        grid_buf_ = std::move(g);
        grid_ = Dev<const uint64_t>(static_cast<const uint64_t*>(grid_buf_->data()));
        fault_buf_ = alloc(sizeof(int));
        DS4_GPU_CHECK(Memset, fault_buf_->data(), 0, sizeof(int));
        fault_ = Dev<int>(static_cast<int*>(fault_buf_->data()));
        gpu_check(ds4GpuHostAlloc((void**)&fault_host_, sizeof(int)), DS4_GPU_RT_PREFIX "HostAlloc", "fault word");
        *fault_host_ = 0;
        pos_buf_ = alloc(sizeof(int64_t));
        DS4_GPU_CHECK(Memset, pos_buf_->data(), 0, sizeof(int64_t));
        // DS4KIT_GPU_GRAPHS=0: every step issues its launches (a measurement of what graphs buy,
        // and a way around a runtime whose graphs misbehave). Same bits either way.
        const char* graphs = std::getenv("DS4KIT_GPU_GRAPHS");
        steps_on_ = !(graphs && std::strcmp(graphs, "0") == 0);
    }
    ~GpuBackend() override {
        drop_graphs();
        weights_.reset();  // frees device memory; the runtime waits for pending work
        for (auto& b : scratch_) b.reset();
        grid_buf_.reset();
        fault_buf_.reset();
        pos_buf_.reset();
        if (fork_) (void)DS4_GPU_RT(EventDestroy)(fork_);
        if (join_) (void)DS4_GPU_RT(EventDestroy)(join_);
        if (side_) (void)DS4_GPU_RT(StreamDestroy)(side_);
        if (stream_) (void)DS4_GPU_RT(StreamDestroy)(stream_);
        if (fault_host_) (void)ds4GpuHostFree(fault_host_);
    }

    std::string name() const override { return name_; }
    std::string kind() const override { return DS4_GPU_KIND_NAME; }
    int n_threads() const override { return 1; }

    // ---- Memory ----
    std::unique_ptr<DeviceBuffer> alloc(size_t bytes) override {
        void* p = nullptr;
        if (bytes > 0) gpu_check(DS4_GPU_RT(Malloc)(&p, bytes), DS4_GPU_RT_PREFIX "Malloc", std::to_string(bytes) + " bytes");
        return std::make_unique<GpuBuffer>(p, bytes);
    }
    // A pageable `src` may be reused once upload returns (the runtime stages it); a
    // download into pageable memory completes before the call returns. Neither holds on
    // to the caller's memory, so no pinned staging is needed for correctness.
    void upload(void* dst, const void* src, size_t bytes) override {
        if (bytes == 0) return;
        check_ptrs("upload", dst, src);
        DS4_GPU_CHECK(MemcpyAsync, dst, src, bytes, ds4GpuMemcpyHostToDevice, stream_);
    }
    void download(void* dst, const void* src, size_t bytes) override {
        if (bytes == 0) return;
        check_ptrs("download", dst, src);
        join_side();  // the bytes may be a split the side stream writes
        DS4_GPU_CHECK(MemcpyAsync, dst, src, bytes, ds4GpuMemcpyDeviceToHost, stream_);
    }
    // Waits for the stream, then reports an invalid input a kernel met since the last call
    // (the fault word: 1 embed token id, 2 hash-routing token id, 3 expert id).
    void synchronize() override {
        // The fault word rides the stream into pinned memory: one wait, not a second copy after it.
        join_side();
        DS4_GPU_CHECK(MemcpyAsync, fault_host_, fault_.get(), sizeof(int), ds4GpuMemcpyDeviceToHost, stream_);
        DS4_GPU_CHECK(StreamSynchronize, stream_);
        const int code = *fault_host_;
        if (code == 0) return;
        DS4_GPU_CHECK(Memset, fault_.get(), 0, sizeof(int));
        const std::string who = code >= 1 && code <= 3 ? fault_names_[code] : std::string("?");
        switch (code) {
            case 1: throw ArgumentError(DS4_GPU_WHO ": embed: a token id outside tensor '" + who + "'");
            case 2: throw ArgumentError(DS4_GPU_WHO ": route: a token id outside tensor '" + who + "'");
            case 3: throw ArgumentError(DS4_GPU_WHO ": moe: an expert id outside the experts of '" + who + "'");
            default: throw ArgumentError(DS4_GPU_WHO ": a kernel reported fault code " + std::to_string(code));
        }
    }

    void bind_weights(const WeightTable& table) override {
        drop_graphs();  // recordings name the old copies' addresses (a drafter's bind replaces them)
        auto store = std::make_unique<gpu::WeightStore>();
        store->bind(table, stream_);
        weights_ = std::move(store);
    }
    bool holds_weight_copies() const override { return true; }

    // ---- Dense operations ----
    // A matmul's column count and strides: ncols columns of W.n_in() values at X + c * ldx, of
    // n_rows results at Y + c * ldy (one column needs no stride).
    static void check_columns(const char* op, const WeightView& W, int64_t n_rows, int64_t ldx, int ncols,
                              int64_t ldy) {
        if (ncols < 0) throw ArgumentError(std::string(DS4_GPU_WHO ": ") + op + ": negative column count " + std::to_string(ncols));
        if (ncols > 1 && (ldx < W.n_in() || ldy < n_rows)) {
            throw ArgumentError(std::string(DS4_GPU_WHO ": ") + op + ": tensor '" + W.name + "': strides ldx " +
                                std::to_string(ldx) + ", ldy " + std::to_string(ldy) + " are shorter than a column (" +
                                std::to_string(W.n_in()) + " in, " + std::to_string(n_rows) + " out)");
        }
    }

    void matmul(const WeightView& W, int64_t row0, int64_t n_rows, Dev<const float> X, int64_t ldx, int ncols,
                Dev<float> Y, int64_t ldy) override {
        if (row0 < 0 || n_rows < 0 || row0 + n_rows > W.n_rows()) {
            throw ArgumentError(DS4_GPU_WHO ": matmul: tensor '" + W.name + "': rows " + std::to_string(row0) + ".." +
                                std::to_string(row0 + n_rows) + " outside its " + std::to_string(W.n_rows()) +
                                " rows");
        }
        check_columns("matmul", W, n_rows, ldx, ncols, ldy);
        if (n_rows == 0 || ncols == 0) return;
        check_matrix_type(W, "matmul");
        const gpu::DeviceWeight& dw = weights().get(W, "matmul");
        const NormInt8 ready = take_norm_int8();
        if (gpu::int8_matmul_for(W.type, W.n_in())) {
            std::lock_guard<std::mutex> lock(scratch_mu_);
            if (ready.feeds(X.get(), ldx, W.n_in(), ncols)) {  // the norm that wrote X quantised it
                gpu::launch_matmul_int8_on(dw.data + (uint64_t)row0 * W.row_bytes, W.row_bytes, W.n_in(), n_rows,
                                           W.n_rows(), ready.cols, ncols, Y.get(), ldy, stream_);
                return;
            }
            uint8_t* q = scratch<uint8_t>(kSlotMatmulInt8, gpu::int8_matmul_scratch_bytes(ncols, 1, W.n_in()));
            gpu::launch_matmul_int8(dw.data + (uint64_t)row0 * W.row_bytes, W.row_bytes, W.n_in(), n_rows, W.n_rows(),
                                    X.get(), ldx, ncols, Y.get(), ldy, q, stream_);
            return;
        }
        gpu::launch_matmul(W.type, dw.data + (uint64_t)row0 * W.row_bytes, W.row_bytes, W.n_in(), n_rows, W.n_rows(),
                           X.get(), ldx, ncols, Y.get(), ldy, grid_.get(), stream_);
    }

    // One launch: the kernel finds each row's slice of X from its group (gpu_matmul.cu).
    void matmul_grouped(const WeightView& W, int64_t n_groups, int64_t group_rows, Dev<const float> X,
                        int64_t x_stride, int64_t ldx, int ncols, Dev<float> Y, int64_t ldy) override {
        const int64_t rows = n_groups * group_rows;
        if (n_groups < 0 || group_rows < 0 || rows > W.n_rows()) {
            throw ArgumentError(DS4_GPU_WHO ": matmul_grouped: tensor '" + W.name + "': " + std::to_string(n_groups) +
                                " groups of " + std::to_string(group_rows) + " rows outside its " +
                                std::to_string(W.n_rows()) + " rows");
        }
        if (ncols < 0) throw ArgumentError(DS4_GPU_WHO ": matmul_grouped: negative column count " + std::to_string(ncols));
        const bool fits = x_stride >= 0 && (n_groups <= 1 || x_stride >= W.n_in()) &&
                          (ncols <= 1 || (ldx >= (n_groups - 1) * x_stride + W.n_in() && ldy >= rows));
        if (!fits) {
            throw ArgumentError(DS4_GPU_WHO ": matmul_grouped: tensor '" + W.name + "': x stride " +
                                std::to_string(x_stride) + ", ldx " + std::to_string(ldx) + ", ldy " +
                                std::to_string(ldy) + " do not hold " + std::to_string(n_groups) + " groups of " +
                                std::to_string(W.n_in()) + " in and " + std::to_string(group_rows) + " out");
        }
        take_norm_int8();  // not a norm's consumer
        if (rows == 0 || ncols == 0) return;
        check_matrix_type(W, "matmul_grouped");
        const gpu::DeviceWeight& dw = weights().get(W, "matmul_grouped");
        if (gpu::int8_matmul_for(W.type, W.n_in())) {  // each group's columns quantised on their own
            std::lock_guard<std::mutex> lock(scratch_mu_);
            uint8_t* q = scratch<uint8_t>(kSlotMatmulInt8, gpu::int8_matmul_scratch_bytes(ncols, n_groups, W.n_in()));
            gpu::launch_matmul_int8(dw.data, W.row_bytes, W.n_in(), rows, W.n_rows(), X.get(), ldx, ncols, Y.get(), ldy,
                                    q, stream_, group_rows, n_groups, x_stride);
            return;
        }
        gpu::launch_matmul(W.type, dw.data, W.row_bytes, W.n_in(), rows, W.n_rows(), X.get(), ldx, ncols, Y.get(), ldy,
                           grid_.get(), stream_, group_rows, x_stride);
    }

    // The matrices of one type in one launch (gpu_matmul.cu ds4_matmul_set_kernel).
    void matmul_shared_x(const std::vector<MatmulOut>& outs, Dev<const float> X, int64_t ldx, int ncols) override {
        if (outs.empty()) return;
        const int64_t n_in = outs[0].W->n_in();
        std::vector<gpu::MatmulSetJob> jobs, int8_jobs;  // the Q8_0 ones on int8 columns (int8_matmul_for)
        jobs.reserve(outs.size());
        for (const MatmulOut& o : outs) {
            const WeightView& W = *o.W;
            if (W.n_in() != n_in) {
                throw ArgumentError(DS4_GPU_WHO ": matmul_shared_x: tensor '" + W.name + "' takes " +
                                    std::to_string(W.n_in()) + " inputs, tensor '" + outs[0].W->name + "' " +
                                    std::to_string(n_in));
            }
            check_columns("matmul_shared_x", W, W.n_rows(), ldx, ncols, o.ldy);
            check_matrix_type(W, "matmul_shared_x");
            const gpu::DeviceWeight& dw = weights().get(W, "matmul_shared_x");
            const gpu::MatmulSetJob job{W.type, dw.data, W.row_bytes, W.n_rows(), o.Y.get(), o.ldy};
            (gpu::int8_matmul_for(W.type, n_in) ? int8_jobs : jobs).push_back(job);
        }
        const NormInt8 ready = take_norm_int8();
        if (ncols == 0) return;
        gpu::launch_matmul_set(jobs.data(), (int)jobs.size(), n_in, X.get(), ldx, ncols, grid_.get(), stream_);
        if (!int8_jobs.empty()) {
            std::lock_guard<std::mutex> lock(scratch_mu_);
            if (ready.feeds(X.get(), ldx, n_in, ncols)) {
                gpu::launch_matmul_set_int8_on(int8_jobs.data(), (int)int8_jobs.size(), n_in, ready.cols, ncols, stream_);
                return;
            }
            uint8_t* q = scratch<uint8_t>(kSlotMatmulInt8, gpu::int8_matmul_scratch_bytes(ncols, 1, n_in));
            gpu::launch_matmul_set_int8(int8_jobs.data(), (int)int8_jobs.size(), n_in, X.get(), ldx, ncols, q, stream_);
        }
    }

    void rms_norm(Dev<const float> x, const WeightView* w, int64_t n, int64_t n_rows, double eps,
                  Dev<float> y) override {
        const float* wf = nullptr;
        if (w) {
            if (w->n_elements() != n) {
                throw ArgumentError(DS4_GPU_WHO ": rms_norm: weight '" + w->name + "' is not a vector view of " +
                                    std::to_string(n) + " values (" + std::to_string(w->n_elements()) + ")");
            }
            wf = vecf(*w, "rms_norm");
        }
        const WeightView* next = norm_feeds_;
        norm_feeds_ = nullptr, norm_int8_ = NormInt8{};
        if (next && n_rows > 0 && gpu::int8_matmul_for(next->type, n) && gpu::rms_norm_int8_fits(n) &&
            gpu::rms_norm_int8_on()) {
            std::lock_guard<std::mutex> lock(scratch_mu_);
            uint8_t* q = scratch<uint8_t>(kSlotMatmulInt8, gpu::int8_matmul_scratch_bytes((int)n_rows, 1, n));
            const gpu::Int8ColsOut c = gpu::int8_columns_at(q, n_rows * n);
            gpu::launch_rms_norm(x.get(), wf, n, n_rows, eps, y.get(), stream_, &c);
            norm_int8_ = NormInt8{y.get(), n, n_rows, gpu::Int8Cols{c.q, c.d}};
            return;
        }
        gpu::launch_rms_norm(x.get(), wf, n, n_rows, eps, y.get(), stream_);
    }

    void norm_feeds(const WeightView& W) override { norm_feeds_ = &W; }

    void scale(Dev<float> x, int64_t n, double s) override { gpu::launch_scale(x.get(), n, s, stream_); }
    void add(Dev<float> y, Dev<const float> x, int64_t n) override { gpu::launch_add(y.get(), x.get(), n, stream_); }
    void row_top_k(Dev<const float> x, int64_t n_rows, int64_t n, int64_t k, Dev<int32_t> ids,
                   Dev<float> vals) override {
        check_row_top_k(DS4_GPU_WHO, n_rows, n, k);
        gpu::launch_row_top_k(x.get(), n_rows, n, k, ids.get(), vals.get(), stream_);
    }

    void copy(Dev<float> dst, Dev<const float> src, int64_t n) override {
        if (n <= 0) return;
        DS4_GPU_CHECK(MemcpyAsync, dst.get(), src.get(), (size_t)n * sizeof(float), ds4GpuMemcpyDeviceToDevice,
                      stream_);
    }

    void copy_ids(Dev<int32_t> dst, Dev<const int32_t> src, int64_t n) override {
        if (n <= 0) return;
        DS4_GPU_CHECK(MemcpyAsync, dst.get(), src.get(), (size_t)n * sizeof(int32_t), ds4GpuMemcpyDeviceToDevice,
                      stream_);
    }

    void embed(const WeightView& table, Dev<const int32_t> tokens, int64_t n, int64_t n_copies,
               Dev<float> X) override {
        check_matrix_type(table, "embed");
        const gpu::DeviceWeight& dw = weights().get(table, "embed");
        fault_names_[1] = table.name;
        gpu::launch_embed(table.type, dw.data, table.row_bytes, table.n_rows(), table.n_in(), tokens.get(), n,
                          n_copies, X.get(), grid_.get(), fault_.get(), stream_);
    }

    void rope_tail(Dev<float> x, int64_t n_tokens, int64_t rows_per_token, int64_t row_len, int64_t pos0,
                   const RopeSpec& spec, bool inverse) override {
        check_rope(spec, row_len, "rope_tail");
        gpu::launch_rope_tail(x.get(), n_tokens, rows_per_token, row_len, step_pos(pos0), spec, inverse, stream_);
    }

    void fp8_kv_round_trip(Dev<float> x, int64_t n_rows, int64_t n, int64_t n_rot) override {
        gpu::launch_fp8_kv_round_trip(x.get(), n_rows, n, n_rot, stream_);
    }

    void indexer_transform(Dev<float> x, int64_t n_rows, int64_t d, bool fp4) override {
        gpu::launch_indexer_transform(x.get(), n_rows, d, fp4, stream_);
    }

    // ---- Hyper-connections: the mix logits from slices (gpu_hc.cu), tokens as grid rows ----
    void hc_pre(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                const WeightView& scale_w, const WeightView& base_w, int64_t iters, double hc_eps, double rms_eps,
                Dev<float> u, Dev<double> split) override {
        hc_pre_collapse(X, n_tokens, n_hc, E, fn, scale_w, base_w, iters, hc_eps, rms_eps, nullptr, u, split);
    }

    void hc_pre_norm(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                     const WeightView& scale_w, const WeightView& base_w, int64_t iters, double hc_eps, double rms_eps,
                     const WeightView& norm, Dev<float> u, Dev<double> split) override {
        // DS4KIT_GPU_HC_NORM=split (default): the seam's two calls, the 16-block collapse then the
        // norm, which measured faster than the one-block fused kernel (run 18: 6.1 + 7.0 against
        // 16.2 us a call without early launches); =fused: ds4_hc_collapse_norm_kernel.
        const bool fused = env_choice("DS4KIT_GPU_HC_NORM", {"split", "fused"}) == 1;
        if (!fused || E > gpu::hc_collapse_norm_max_values() || norm.n_elements() != E) {  // the seam's two calls
            Backend::hc_pre_norm(X, n_tokens, n_hc, E, fn, scale_w, base_w, iters, hc_eps, rms_eps, norm, u, split);
            return;
        }
        norm_feeds_ = nullptr, norm_int8_ = NormInt8{};  // the fused kernel writes no int8 columns
        hc_pre_collapse(X, n_tokens, n_hc, E, fn, scale_w, base_w, iters, hc_eps, rms_eps, &norm, u, split);
    }

    void hc_post(Dev<const float> y, Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E,
                 Dev<const double> split, Dev<float> X_out) override {
        join_side();
        gpu::launch_hc_post(y.get(), X.get(), n_tokens, n_hc, E, split.get(), X_out.get(), stream_);
    }

    void hc_head(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                 const WeightView& scale_w, const WeightView& base_w, double hc_eps, double rms_eps,
                 Dev<float> e) override {
        if (n_tokens <= 0) return;
        std::lock_guard<std::mutex> lock(scratch_mu_);
        const float* scale = vecf(scale_w, "hc_head");
        const float* base = vecf(base_w, "hc_head");
        const HcMix mix = hc_mix(X.get(), n_tokens, n_hc, E, fn, "hc_head");
        gpu::launch_hc_collapse(mix.part, mix.ss, mix.n_mix, rms_eps, X.get(), n_tokens, n_hc, E, scale, base, hc_eps,
                                e.get(), stream_);
    }

    void hc_mean(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, Dev<float> out,
                 int64_t ldo) override {
        gpu::launch_hc_mean(X.get(), n_tokens, n_hc, E, out.get(), ldo, stream_);
    }

    // ---- Mixture of experts ----
    void route(Dev<const float> logits, Dev<const int32_t> tokens, int64_t n, const RouteParams& rp,
               Dev<int32_t> experts, Dev<float> weights_out) override {
        const int32_t* hash = nullptr;
        int64_t hash_rows = 0, hash_stride = 0;
        const float* bias = nullptr;
        if (rp.hash_table) {
            if (rp.hash_table->type != kTypeI32 || rp.hash_table->n_in() < rp.n_used) {
                throw ArgumentError(DS4_GPU_WHO ": route: hash table '" + rp.hash_table->name + "' is not an I32 table of " +
                                    std::to_string(rp.n_used) + " experts per token");
            }
            hash = reinterpret_cast<const int32_t*>(weights().get(*rp.hash_table, "route").data);
            hash_rows = rp.hash_table->n_rows();
            hash_stride = (int64_t)(rp.hash_table->row_bytes / 4);
            fault_names_[2] = rp.hash_table->name;
        } else if (rp.bias) {
            bias = vecf(*rp.bias, "route");
        } else {
            throw ArgumentError(DS4_GPU_WHO ": route: neither a hash table nor a selection bias given");
        }
        if (rp.n_used < 1 || rp.n_used > rp.n_expert) {
            throw ArgumentError(DS4_GPU_WHO ": route: " + std::to_string(rp.n_used) + " experts used of " +
                                std::to_string(rp.n_expert));
        }
        gpu::launch_route(logits.get(), tokens.get(), n, rp.n_expert, rp.n_used, hash, hash_rows, hash_stride, bias,
                          rp.normalise, rp.scale, experts.get(), weights_out.get(), fault_.get(), stream_);
    }

    void moe(const MoeWeights& mw, Dev<const float> h, int64_t n_tokens, Dev<const int32_t> experts,
             Dev<const float> weights_in, int64_t n_used, double clamp, double clamp_shared, Dev<float> y) override {
        if (n_tokens <= 0) return;
        gpu::MoeLaunch a;
        a.exp = moe_mats(mw.gate_exps, mw.up_exps, mw.down_exps);
        a.sh = moe_mats(mw.gate_shexp, mw.up_shexp, mw.down_shexp);
        a.n_expert = mw.gate_exps.ne[2];
        a.n_tokens = n_tokens;
        a.K = n_used;
        a.E = mw.down_shexp.n_rows();
        if (mw.gate_exps.n_in() != a.E || mw.down_exps.ne[1] != a.E || mw.down_exps.n_in() != a.exp.F ||
            mw.down_shexp.n_in() != a.sh.F || a.n_expert > 65535) {
            throw ArgumentError(DS4_GPU_WHO ": moe: expert shapes of '" + mw.gate_exps.name + "', '" +
                                mw.down_exps.name + "' and the shared expert do not fit together");
        }
        a.h = h.get();
        a.experts = experts.get();
        a.weights = weights_in.get();
        a.clamp = clamp;
        a.clamp_shared = clamp_shared;
        a.y = y.get();
        a.grid = grid_.get();
        a.fault = fault_.get();
        fault_names_[3] = mw.gate_exps.name;
        std::lock_guard<std::mutex> lock(scratch_mu_);
        const int64_t P = n_tokens * n_used;
        a.count = scratch<int32_t>(kSlotMoePlan, 3 * a.n_expert + 1 + 2 * P);
        a.start = a.count + a.n_expert;
        a.active = a.start + a.n_expert;
        a.n_active = a.active + a.n_expert;
        a.col_of = a.n_active + 1;
        a.tok_of = a.col_of + P;
        a.act = scratch<float>(kSlotMoeAct, P * a.exp.F + 2 * n_tokens * a.sh.F);
        a.act_sh = a.act + P * a.exp.F;
        a.up_sh = a.act_sh + n_tokens * a.sh.F;
        a.out = scratch<float>(kSlotMoeOut, P * a.E + n_tokens * a.E);
        a.out_sh = a.out + P * a.E;
        if (gpu::int8_experts_for(a.exp, a.E)) {
            a.int8 = scratch<uint8_t>(kSlotMoeInt8, gpu::int8_scratch_bytes(n_tokens, a.E, n_used * a.exp.F));
        }
        if (gpu::int8_shared_for(a.exp, a.sh, a.E)) {
            a.int8_sh = scratch<uint8_t>(kSlotMoeInt8Shared, gpu::int8_scratch_bytes(n_tokens, a.E, a.sh.F));
        }
        run_beside([&](ds4_gpu_stream_t st) { gpu::launch_moe_shared(a, st); });  // reads only h
        gpu::launch_moe_routed(a, stream_);
        join_side();
        gpu::launch_moe_combine(a, stream_);
    }

    // ---- Sequence state ----
    std::unique_ptr<SeqState> new_seq_state(const SeqShape& shape) override {
        return std::make_unique<gpu::GpuSeqState>(shape, stream_);
    }
    std::unique_ptr<SeqState> seq_state_from_image(const SeqShape& shape, const SeqStateImage& image) override {
        return gpu::GpuSeqState::from_image(shape, image, stream_);
    }

    void kv_store(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> kv) override {
        gpu::GpuSeqState& S = gpu::gpu_state(st);
        check_layer(S, il, "kv_store");
        if (n > S.shape().max_block) {
            throw ArgumentError(DS4_GPU_WHO ": kv_store: block of " + std::to_string(n) + " tokens exceeds max_block " +
                                std::to_string(S.shape().max_block));
        }
        gpu::launch_kv_store(kv.get(), n, S.shape().head_dim, step_pos(p0), S.ring_rows,
                             S.layers[(size_t)il].ring.get(), stream_);
    }

    void attention_inputs(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<float> Q, int64_t n_head,
                          Dev<float> kv, const WeightView& kv_norm, int64_t D, double rms_eps, const RopeSpec& rope,
                          bool fp8_kv, int64_t fp8_n_rot) override {
        // DS4KIT_GPU_ATTN_INPUTS=fused (default): one kernel for the seam's six calls;
        // =split: the six calls (the A/B baseline, and any row the kernel cannot hold).
        gpu::GpuSeqState& S = gpu::gpu_state(st);
        const bool fused = env_choice("DS4KIT_GPU_ATTN_INPUTS", {"fused", "split"}) == 0;
        if (!fused || D > gpu::attention_inputs_max_row() || D != S.shape().head_dim || kv_norm.n_elements() != D ||
            fp8_n_rot < 0 || fp8_n_rot > D) {
            Backend::attention_inputs(st, il, p0, n, Q, n_head, kv, kv_norm, D, rms_eps, rope, fp8_kv, fp8_n_rot);
            return;
        }
        check_layer(S, il, "attention_inputs");
        check_rope(rope, D, "attention_inputs");
        if (n > S.shape().max_block) {
            throw ArgumentError(DS4_GPU_WHO ": attention_inputs: block of " + std::to_string(n) +
                                " tokens exceeds max_block " + std::to_string(S.shape().max_block));
        }
        gpu::launch_attention_inputs(Q.get(), n, n_head, kv.get(), vecf(kv_norm, "attention_inputs"), D, rms_eps,
                                     step_pos(p0), rope, fp8_kv ? D - fp8_n_rot : 0, S.ring_rows,
                                     S.layers[(size_t)il].ring.get(), stream_);
    }

    void compress(SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> kappa, Dev<const float> gate,
                  int64_t ld, const CompressorParams& cp) override {
        gpu::GpuSeqState& S = gpu::gpu_state(st);
        check_layer(S, il, "compress");
        gpu::GpuLayerState& L = S.layers[(size_t)il];
        const int64_t r = L.ratio;
        if (!r || (cp.indexer && r != 4)) {
            throw ArgumentError(DS4_GPU_WHO ": compress: layer " + std::to_string(il) + " (ratio " + std::to_string(r) +
                                ") has no " + (cp.indexer ? "indexer " : "") + "compressor");
        }
        gpu::GpuCompressor& c = cp.indexer ? L.idx_ring : L.comp_ring;
        int64_t& count = cp.indexer ? L.n_idx : L.n_comp;
        if (count != p0 / r) {
            throw ArgumentError(DS4_GPU_WHO ": compress: layer " + std::to_string(il) + " holds " +
                                std::to_string(count) + " rows, not the " + std::to_string(p0 / r) +
                                " of position " + std::to_string(p0));
        }
        const int64_t Dc = cp.row_dim;
        if (Dc != (cp.indexer ? S.shape().idx_dim : S.shape().head_dim) || c.width != (r == 4 ? 2 : 1) * Dc) {
            throw ArgumentError(DS4_GPU_WHO ": compress: row length " + std::to_string(Dc) +
                                " does not fit layer " + std::to_string(il) + "'s state");
        }
        check_rope(*cp.rope, Dc, "compress");
        gpu::launch_compress_store(kappa.get(), gate.get(), ld, n, step_pos(p0), c.width, r, vecf(*cp.ape, "compress"),
                                   c.rows, c.kv.get(), c.score.get(), stream_);
        const int64_t n_out = (p0 + n) / r - p0 / r;  // windows completing inside the block
        // A step that may be replayed launches the pooling whether or not a window completes
        // here (its blocks find out from the position) and has room for its whole span's rows.
        const int64_t max_out = step_.on ? (n + r - 1) / r : n_out;
        if (max_out <= 0) return;
        S.reserve_rows(il, cp.indexer, plan_end(p0, n) / r);  // count + n_out, or the span's rows
        const int mode = cp.indexer ? (cp.indexer_fp4 ? 3 : 2) : (cp.fp8_kv ? 1 : 0);
        uint16_t* rows = cp.indexer ? L.idx.get() : L.comp.get();
        gpu::launch_compress_rows(step_pos(p0), n, max_out, r, c.window, c.rows, c.width, Dc, c.kv.get(), c.score.get(),
                                  vecf(*cp.norm, "compress"), cp.rms_eps, *cp.rope, cp.n_rot, mode, rows, stream_);
        count += n_out;
    }

    void indexer_select(const SeqState& st, int64_t il, int64_t p0, Dev<const float> q, Dev<const float> w, int64_t n,
                        int64_t n_head, int64_t d, int64_t top_k, Dev<int32_t> selected) override {
        const gpu::GpuSeqState& S = gpu::gpu_state(st);
        check_layer(S, il, "indexer_select");
        const gpu::GpuLayerState& L = S.layers[(size_t)il];
        const int64_t ld = (p0 + n) / 4;  // rows the block's last token sees
        if (L.ratio != 4 || L.n_idx < ld || d != S.shape().idx_dim) {
            throw ArgumentError(DS4_GPU_WHO ": indexer_select: layer " + std::to_string(il) + " holds " +
                                std::to_string(L.n_idx) + " indexer rows of " + std::to_string(S.shape().idx_dim) +
                                "; tokens at " + std::to_string(p0) + ".." + std::to_string(p0 + n - 1) + " need " +
                                std::to_string(ld) + " of " + std::to_string(d));
        }
        if (n <= 0 || ld <= 0) return;
        const int64_t ld_cap = std::max(ld, plan_end(p0, n) / 4);  // a replayed step's rows, at most
        std::lock_guard<std::mutex> lock(scratch_mu_);
        double* scores = scratch<double>(kSlotScores, n * ld_cap);
        gpu::launch_indexer_select(L.idx.get(), step_pos(p0), q.get(), w.get(), n, n_head, d, top_k, scores, ld_cap,
                                   selected.get(), stream_);
    }

    void attention(const SeqState& st, int64_t il, int64_t p0, int64_t n, Dev<const float> Q, int64_t n_head,
                   int64_t D, const CompRowView& comp, const WeightView& sinks, const RopeSpec& rope,
                   Dev<float> O) override {
        const gpu::GpuSeqState& S = gpu::gpu_state(st);
        check_layer(S, il, "attention");
        const gpu::GpuLayerState& L = S.layers[(size_t)il];
        if (D != S.shape().head_dim) {
            throw ArgumentError(DS4_GPU_WHO ": attention: head_dim " + std::to_string(D) + " != the state's " +
                                std::to_string(S.shape().head_dim));
        }
        if (n <= 0) return;
        check_rope(rope, D, "attention");
        gpu::AttnKeys k;
        k.ring = L.ring.get();
        k.ring_rows = S.ring_rows;
        k.n_swa = S.shape().n_swa;
        // Keys the block's last token sees (sizes the grid and the scratch): for a step that may be
        // replayed, at the end of its span.
        const int64_t end = plan_end(p0, n);
        int64_t most = std::min<int64_t>(S.shape().n_swa, end);
        if (comp.ratio) {
            const int64_t visible = (p0 + n) / comp.ratio;
            if (comp.ratio != L.ratio || L.n_comp < visible) {
                throw ArgumentError(DS4_GPU_WHO ": attention: layer " + std::to_string(il) + " holds " +
                                    std::to_string(L.n_comp) + " compressed rows (ratio " + std::to_string(L.ratio) +
                                    "); the block needs " + std::to_string(visible) + " (ratio " +
                                    std::to_string(comp.ratio) + ")");
            }
            k.comp = L.comp.get();
            k.ratio = comp.ratio;
            k.selected = comp.selected.get();
            k.top_k = comp.top_k;
            const int64_t visible_end = end / comp.ratio;
            most += comp.selected ? std::min(visible_end, comp.top_k) : visible_end;
        }
        std::lock_guard<std::mutex> lock(scratch_mu_);
        const gpu::AttnScratch need = gpu::attention_scratch(n, n_head, D, most);
        double* part = scratch<double>(kSlotAttnPart, need.part);
        gpu::launch_attention(k, step_pos(p0), n, Q.get(), n_head, D, vecf(sinks, "attention"), rope, most, part,
                              O.get(), stream_);
    }

    void attention_rows(Dev<const float> Q, int64_t n, int64_t n_head, int64_t D, Dev<const float> K, int64_t T,
                        const WeightView& sinks, const RopeSpec& rope, int64_t pos0, Dev<float> O) override {
        if (n <= 0) return;
        check_rope(rope, D, "attention_rows");
        gpu::AttnKeys k;
        k.rows = K.get();
        k.T = T;
        std::lock_guard<std::mutex> lock(scratch_mu_);
        const int64_t most = std::max<int64_t>(T, 1);
        const gpu::AttnScratch need = gpu::attention_scratch(n, n_head, D, most);
        double* part = scratch<double>(kSlotAttnPart, need.part);
        gpu::launch_attention(k, gpu::absolute_pos(pos0), n, Q.get(), n_head, D, vecf(sinks, "attention_rows"), rope,
                              most, part, O.get(), stream_);
    }

    // ---- Step graphs ----
    // A key's first step issues its launches in step form: positions relative to the step's first
    // (read from pos_buf_, which a kernel sets first) and grids and room sized for every position
    // of its span (kStepSpan positions, up to plan_end). The key's second step records the same
    // launches as a graph and launches it; later ones set the word and replay the graph. So a
    // recording never allocates (the first run grew whatever it needed, and a growth changes the
    // key), and a replay runs the very kernels, arguments and order the first run did.
    bool begin_step(SeqState& st, int64_t p0, int64_t n, const std::vector<int64_t>& key) override {
        if (!steps_on_ || n < 1 || n > kMaxStepTokens) return false;
        if (step_.on) throw ArgumentError(DS4_GPU_WHO ": begin_step inside an unfinished step");
        gpu::GpuSeqState& S = gpu::gpu_state(st);
        const int64_t rounded = (p0 + n + kStepSpan - 1) / kStepSpan * kStepSpan;
        const int64_t plan = std::min(rounded, std::max(p0 + n, S.shape().max_ctx));
        std::vector<int64_t> full(key);
        full.insert(full.end(), {n, (int64_t)S.id(), (int64_t)S.generation(), (int64_t)scratch_generation_, plan});
        if (graphs_.size() >= kMaxGraphs && !graphs_.count(full)) drop_graphs();
        StepGraph& g = graphs_[full];
        gpu::launch_set_pos(pos_word(), p0, stream_);
#if DS4_GPU_GRAPHS
        if (g.exec) {
            S.count_rows_to(p0 + n);  // what the step's compress calls would have counted
            DS4_GPU_CHECK(GraphLaunch, g.exec, stream_);
            ++stats_.replayed;
            return true;
        }
#endif
        bool record = false;
#if DS4_GPU_GRAPHS
        if (g.runs > 0) {
            join_side();
            DS4_GPU_CHECK(StreamBeginCapture, stream_, ds4GpuStreamCaptureModeThreadLocal);
            record = true;
        }
#endif
        step_ = Step{true, record, p0, plan, &g};  // only once the capture (if any) has begun
        ++g.runs;
        ++stats_.issued;
        return false;
    }

    std::vector<std::pair<std::string, int64_t>> counters() const override {
        return {{"steps_issued", (int64_t)stats_.issued},
                {"steps_recorded", (int64_t)stats_.recorded},
                {"steps_replayed", (int64_t)stats_.replayed},
                {"step_graphs_held", (int64_t)graphs_.size()},
                {"pdl_launches", gpu::pdl_launches() ? 1 : 0}};
    }

    void end_step(bool ok) override {
        const Step s = step_;
        step_ = Step{};
        if (!s.on || !s.recording) return;
#if DS4_GPU_GRAPHS
        join_side();  // the side stream's work joins the graph before the capture ends
        ds4_gpu_graph_t graph = nullptr;
        const ds4_gpu_error_t rc = DS4_GPU_RT(StreamEndCapture)(stream_, &graph);
        if (!ok || rc != DS4_GPU_RT(Success)) {
            if (graph) (void)DS4_GPU_RT(GraphDestroy)(graph);
            (void)DS4_GPU_RT(GetLastError)();
            if (ok) gpu_check(rc, DS4_GPU_RT_PREFIX "StreamEndCapture");
            return;  // the exception that ended the step is the one to report
        }
        ds4_gpu_graph_exec_t exec = nullptr;
        const ds4_gpu_error_t ri = DS4_GPU_RT(GraphInstantiateWithFlags)(&exec, graph, 0);
        (void)DS4_GPU_RT(GraphDestroy)(graph);
        gpu_check(ri, DS4_GPU_RT_PREFIX "GraphInstantiateWithFlags");
        s.graph->exec = exec;
        ++stats_.recorded;
        DS4_GPU_CHECK(GraphLaunch, exec, stream_);
#else
        (void)ok;
#endif
    }

private:
    // hc_pre's launches: the mix, the collapse (with the norm by `norm` when given: one kernel,
    // hc_pre_norm's), and the split beside the main stream.
    void hc_pre_collapse(Dev<const float> X, int64_t n_tokens, int64_t n_hc, int64_t E, const WeightView& fn,
                         const WeightView& scale_w, const WeightView& base_w, int64_t iters, double hc_eps,
                         double rms_eps, const WeightView* norm, Dev<float> u, Dev<double> split) {
        if (n_tokens <= 0) return;
        std::lock_guard<std::mutex> lock(scratch_mu_);
        const float* scale = vecf(scale_w, "hc_pre");
        const float* base = vecf(base_w, "hc_pre");
        const HcMix mix = hc_mix(X.get(), n_tokens, n_hc, E, fn, "hc_pre");
        if (norm) {
            gpu::launch_hc_collapse_norm(mix.part, mix.ss, mix.n_mix, rms_eps, X.get(), n_tokens, n_hc, E, scale, base,
                                         hc_eps, vecf(*norm, "hc_pre_norm"), rms_eps, u.get(), stream_);
        } else {
            gpu::launch_hc_collapse(mix.part, mix.ss, mix.n_mix, rms_eps, X.get(), n_tokens, n_hc, E, scale, base,
                                    hc_eps, u.get(), stream_);
        }
        // The split beside the main stream: it reads the partial sums the main stream just wrote.
        run_beside([&](ds4_gpu_stream_t st) {
            gpu::launch_hc_split(mix.part, mix.ss, mix.n_mix, rms_eps, n_tokens, n_hc, E, scale, base, iters, hc_eps,
                                 split.get(), st);
        });
    }

    static constexpr int64_t kMaxStepTokens = 16;  // decode and verify widths; prefill blocks run as issued
    static constexpr int64_t kStepSpan = 256;      // positions one recording serves (then a new key)
    static constexpr size_t kMaxGraphs = 128;      // recordings kept (all dropped when full)

    struct StepGraph {
        int64_t runs = 0;  // steps issued for the key (the second is recorded)
#if DS4_GPU_GRAPHS
        ds4_gpu_graph_exec_t exec = nullptr;
#endif
    };
    struct Step {
        bool on = false, recording = false;
        int64_t base = 0, plan_end = 0;  // the step's first position; the end of its span
        StepGraph* graph = nullptr;
    };

    // A kernel's position: relative to the step inside a step, else absolute.
    gpu::StepPos step_pos(int64_t p) const {
        return step_.on ? gpu::StepPos{p - step_.base, pos_word()} : gpu::absolute_pos(p);
    }
    // The end of the positions a call's grid and scratch must cover.
    int64_t plan_end(int64_t p0, int64_t n) const { return step_.on ? std::max(p0 + n, step_.plan_end) : p0 + n; }
    int64_t* pos_word() const { return static_cast<int64_t*>(pos_buf_->data()); }

    void drop_graphs() {
#if DS4_GPU_GRAPHS
        (void)DS4_GPU_RT(StreamSynchronize)(stream_);  // no replay in flight
        for (auto& kv : graphs_) {
            if (kv.second.exec) (void)DS4_GPU_RT(GraphExecDestroy)(kv.second.exec);
        }
#endif
        graphs_.clear();
    }

    // Scratch buffers by slot, grown as needed (a grow waits for the work that may read the old one).
    enum Slot {
        kSlotHcSumSq,
        kSlotHcDots,
        kSlotMoePlan,
        kSlotMoeAct,
        kSlotMoeOut,
        kSlotMoeInt8,
        kSlotMoeInt8Shared,  // the shared expert's, apart: it runs on the side stream
        kSlotMatmulInt8,     // the Q8_0 matmuls' int8 columns (main stream: one call's at a time)
        kSlotScores,
        kSlotAttnPart,
        kSlots
    };
    template <class T>
    T* scratch(Slot slot, int64_t n) {
        std::unique_ptr<DeviceBuffer>& b = scratch_[slot];
        const size_t want = (size_t)std::max<int64_t>(n, 1) * sizeof(T);
        if (!b || b->bytes() < want) {
            // A step's first run (never recorded) sizes everything its recording will use.
            if (step_.recording) throw ArgumentError(DS4_GPU_WHO ": scratch grew while a step was being recorded");
            synchronize_stream();
            b.reset();
            b = alloc(want + want / 2);
            ++scratch_generation_;
        }
        return static_cast<T*>(b->data());
    }

    // The mix logits' partial sums of n tokens in scratch (caller holds scratch_mu_), after the
    // side stream has finished with the previous ones.
    struct HcMix {
        const float* part;
        const double* ss;
        int64_t n_mix;
    };
    HcMix hc_mix(const float* X, int64_t n, int64_t n_hc, int64_t E, const WeightView& fn, const char* op) {
        const int64_t F = n_hc * E, n_mix = fn.n_rows(), S = gpu::hc_mix_slices(F);
        if (fn.n_in() != F) {
            throw ArgumentError(DS4_GPU_WHO ": hyper-connection mix '" + fn.name + "' takes " + std::to_string(fn.n_in()) +
                                " values, the streams hold " + std::to_string(F));
        }
        if (n_mix < n_hc) {
            throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + ": mix '" + fn.name + "' has " +
                                std::to_string(n_mix) + " rows, fewer than the " + std::to_string(n_hc) + " streams");
        }
        check_matrix_type(fn, op);
        join_side();
        double* ss = scratch<double>(kSlotHcSumSq, n * S);
        float* part = scratch<float>(kSlotHcDots, n * S * n_mix);
        const gpu::DeviceWeight& dw = weights().get(fn, op);
        gpu::launch_hc_mix_partial(fn.type, dw.data, fn.row_bytes, F, n_mix, X, n, grid_.get(), part, ss, stream_);
        return HcMix{part, ss, n_mix};
    }

    // launch(stream) enqueues work on the side stream after everything the main stream holds
    // now (main stream only on HIP-CPU); join_side() later makes the main stream wait for it.
    template <class Launch>
    void run_beside(Launch&& launch) {
        if (!side_on_) {
            launch(stream_);
            return;
        }
        std::lock_guard<std::mutex> lock(side_mu_);
        DS4_GPU_CHECK(EventRecord, fork_, stream_);
        DS4_GPU_CHECK(StreamWaitEvent, side_, fork_, 0);
        launch(side_);
        DS4_GPU_CHECK(EventRecord, join_, side_);
        side_pending_ = true;
    }

    // The main stream waits for the side stream's last work (no host wait). The side stream is
    // in order, so its last work implies every earlier one, whichever session enqueued it.
    void join_side() {
        std::lock_guard<std::mutex> lock(side_mu_);
        if (!side_pending_) return;
        DS4_GPU_CHECK(StreamWaitEvent, stream_, join_, 0);
        side_pending_ = false;
    }

    gpu::MoeMats moe_mats(const WeightView& gate, const WeightView& up, const WeightView& down) {
        check_matrix_type(gate, "moe");
        check_matrix_type(down, "moe");
        if (gate.type != up.type || gate.ne[1] != up.ne[1] || gate.ne[0] != up.ne[0] || gate.ne[2] != up.ne[2] ||
            down.ne[2] != gate.ne[2]) {
            throw UnsupportedError(DS4_GPU_WHO ": operation 'moe' needs '" + gate.name + "' and '" + up.name +
                                   "' of one type and shape");
        }
        gpu::MoeMats m;
        m.type = gate.type;
        m.down_type = down.type;
        m.gate = weights().get(gate, "moe").data;
        m.up = weights().get(up, "moe").data;
        m.down = weights().get(down, "moe").data;
        m.gate_up_row_bytes = gate.row_bytes;
        m.gate_up_expert_bytes = (uint64_t)gate.ne[1] * gate.row_bytes;
        m.down_row_bytes = down.row_bytes;
        m.down_expert_bytes = (uint64_t)down.ne[1] * down.row_bytes;
        m.F = gate.ne[1];
        return m;
    }

    static void check_matrix_type(const WeightView& W, const char* op) {
        if (!gpu::matmul_type_supported(W.type)) {
            throw UnsupportedError(DS4_GPU_WHO ": operation '" + std::string(op) + "' is not implemented for tensor '" +
                                   W.name + "' of ggml type " + std::to_string(W.type));
        }
    }
    static void check_rope(const RopeSpec& spec, int64_t row_len, const char* op) {
        if (spec.n_rot < 0 || spec.n_rot % 2 || spec.n_rot > row_len || spec.n_rot > gpu::kMaxRotHost) {
            throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + ": n_rot " + std::to_string(spec.n_rot) +
                                " (even, at most the row length " + std::to_string(row_len) + " and " +
                                std::to_string(gpu::kMaxRotHost) + ")");
        }
    }
    static void check_layer(const gpu::GpuSeqState& S, int64_t il, const char* op) {
        if (il < 0 || il >= (int64_t)S.layers.size()) {
            throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + ": layer " + std::to_string(il) + " outside the " +
                                std::to_string(S.layers.size()) + " layers of the state");
        }
    }
    // The float copy of a vector view (norms, biases, sinks, HC scale/base, APE).
    const float* vecf(const WeightView& w, const char* op) const {
        const float* f = weights().get(w, op).f32;
        if (!w.vector || !f) {
            throw UnsupportedError(DS4_GPU_WHO ": operation '" + std::string(op) + "' needs a float copy of '" + w.name +
                                   "' (a vector view of a type the engine decodes; got type " + std::to_string(w.type) + ")");
        }
        return f;
    }

    void synchronize_stream() {
        join_side();
        DS4_GPU_CHECK(StreamSynchronize, stream_);
    }

    const gpu::WeightStore& weights() const {
        if (!weights_) throw ArgumentError(DS4_GPU_WHO ": no weights bound (bind_weights is called once per model)");
        return *weights_;
    }
    static void check_ptrs(const char* op, const void* dst, const void* src) {
        if (!dst || !src) throw ArgumentError(DS4_GPU_WHO ": " + std::string(op) + " with a null pointer");
    }

    std::string name_;
    ds4_gpu_stream_t stream_ = nullptr;
    ds4_gpu_stream_t side_ = nullptr;          // hc_pre's split (see the top of the file)
    ds4_gpu_event_t fork_ = nullptr, join_ = nullptr;
    bool side_on_ = false;                     // run_beside uses side_ (else the main stream)
    bool side_pending_ = false;                // a split was enqueued that the main stream has not joined
    std::mutex side_mu_;                       // side_pending_ and the fork/join sequence (after scratch_mu_)
    std::unique_ptr<gpu::WeightStore> weights_;
    std::unique_ptr<DeviceBuffer> scratch_[kSlots];
    std::mutex scratch_mu_;  // one op's scratch stays its own until its kernels are enqueued

    // norm_feeds: the matrix the next norm's output goes into, and the int8 columns a norm wrote
    // (in kSlotMatmulInt8) for the matmul call right after it, which takes them (take_norm_int8).
    struct NormInt8 {
        const float* y = nullptr;
        int64_t n = 0, rows = 0;
        gpu::Int8Cols cols{};
        // Whether they are X's: ncols columns of n_in at X, one after another.
        bool feeds(const float* X, int64_t ldx, int64_t n_in, int ncols) const {
            return y && y == X && n == n_in && rows == ncols && (ncols == 1 || ldx == n_in);
        }
    };
    const WeightView* norm_feeds_ = nullptr;
    NormInt8 norm_int8_;
    NormInt8 take_norm_int8() {
        const NormInt8 r = norm_int8_;
        norm_int8_ = NormInt8{};
        return r;
    }
    std::unique_ptr<DeviceBuffer> grid_buf_, fault_buf_;
    Dev<const uint64_t> grid_;
    Dev<int> fault_;
    int* fault_host_ = nullptr;  // pinned: where synchronize() reads the fault word
    std::string fault_names_[4];  // the tensor each fault code refers to
    std::unique_ptr<DeviceBuffer> pos_buf_;       // the step position word (gpu_step_pos.h)
    bool steps_on_ = true;                        // DS4KIT_GPU_GRAPHS != 0
    Step step_;
    std::map<std::vector<int64_t>, StepGraph> graphs_;
    uint64_t scratch_generation_ = 0;             // scratch growths (part of every step key)
    struct {
        uint64_t issued = 0, recorded = 0, replayed = 0;
    } stats_;
};

}  // namespace

const char* gpu_backend_kind() { return DS4_GPU_KIND_NAME; }

std::string gpu_device_status() {
    int n = 0;
    const ds4_gpu_error_t rc = DS4_GPU_RT(GetDeviceCount)(&n);
    if (rc != DS4_GPU_RT(Success)) {
        (void)DS4_GPU_RT(GetLastError)();  // do not leave the error for a later launch check
        return "no " + kind_upper() + " device: " + gpu_error_text(rc, DS4_GPU_RT_PREFIX "GetDeviceCount", "");
    }
    if (n == 0) return "no " + kind_upper() + " device: " DS4_GPU_RT_PREFIX "GetDeviceCount found none";
    return "ok";
}

std::unique_ptr<Backend> make_gpu_backend() {
    const std::string status = gpu_device_status();
    if (status != "ok") throw UnsupportedError(DS4_GPU_WHO ": " + status);
    return std::make_unique<GpuBackend>(0);
}

}  // namespace ds4
#endif
